from memstream_client.mcp.stdio import main

raise SystemExit(main())
