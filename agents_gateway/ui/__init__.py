"""The memory explorer's files (``static/``): a page of plain ES modules, served at ``/ui`` by
``agents_gateway.routes.ui``. Nothing here is built; what ships in the package is what runs."""
