"""A 45-turn development conversation about project CloudRetail, as data, for ``bench.tokens``.

A user and a coding agent work on CloudRetail over three sessions. Early on the user
states global preferences (dark mode, Python 3.11, PostgreSQL, "I like VS Code, not Vim")
and the project's rules (FastAPI on AlloyDB, Valkey as the only cache, 30 s tool
timeouts, deploy only to asia-southeast1, deploy with rsync not scp); in session 2 one of
them changes ("we moved CloudRetail from FastAPI to Litestar"). In between, the agent
works, and its tool calls bring back what real tool calls bring back: file listings,
long ``pytest`` logs with tracebacks, ``git diff``s, ``kubectl`` tables and logs, a CI
log, an ``rsync`` transfer list and a profile — several thousand tokens each, the heavy
tool output the seed's 45-turn measurement is about.

Everything is deterministic: the tool output is generated from a ``random.Random``
seeded with the turn's number, so every run replays the same text. Tool output is cut
at ``MAX_TOOL_CHARS`` the way agent runtimes truncate it (the gateway takes at most
32,000 characters a turn).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Role = Literal["user", "assistant", "tool"]
ToolStatus = Literal["success", "failure"]

PROJECT = "CloudRetail"
SESSIONS = 3
MAX_TOOL_CHARS = 30_000

#: (needle, what it stands for): every preference and rule the conversation states that the
#: agent's context must still hold at turn 45. For the rule that changed, the new value.
RULES: tuple[tuple[str, str], ...] = (
    ("dark mode", "global preference: dark mode in every editor and terminal"),
    ("Python 3.11", "global preference: writes Python 3.11"),
    ("PostgreSQL", "global preference: default database PostgreSQL"),
    ("VS Code", "global preference: VS Code, not Vim"),
    ("Litestar", "CloudRetail rule, changed in session 2: the backend moved from FastAPI to Litestar"),
    ("AlloyDB", "CloudRetail rule: the database is AlloyDB"),
    ("Valkey", "CloudRetail rule: Valkey is the only cache"),
    ("30 second", "CloudRetail rule: every tool call gets a 30 second timeout"),
    ("asia-southeast1", "CloudRetail rule: deployed only to asia-southeast1"),
    ("rsync", "CloudRetail rule: deploy with rsync, not scp"),
)


@dataclass(frozen=True)
class Turn:
    number: int  # 1-based, across sessions
    session: int  # 1..SESSIONS
    role: Role
    content: str
    tool_name: str | None = None
    tool_status: ToolStatus | None = None


# --- the repository the tool output talks about ------------------------------------------------

_MODULES = ("cart", "checkout", "orders", "products", "search", "users", "payments", "inventory", "promotions")
_SERVICES = (*_MODULES, "pricing", "shipping", "tax")
_COMPONENTS = tuple(
    "ProductCard ProductGrid CartDrawer CheckoutForm AddressForm PaymentForm OrderSummary SearchBar FacetList "
    "Pagination Header Footer ThemeToggle PromoBanner StockBadge".split()
)
_VERBS = ("creates", "updates", "deletes", "lists", "rejects", "returns", "applies", "reserves", "caches", "paginates")
_NOUNS = ("item", "total", "discount", "address", "order", "line", "stock", "token", "page", "filter", "price")
_EXCEPTIONS = (
    ("valkey.exceptions.TimeoutError", "Timeout reading from socket"),
    (
        "sqlalchemy.exc.TimeoutError",
        "QueuePool limit of size 10 overflow 20 reached, connection timed out, "
        "timeout 30.00 (Background on this error at: https://sqlalche.me/e/20/3o7r)",
    ),
    ("asyncio.exceptions.CancelledError", "request cancelled by client"),
    ("KeyError", "'reservation:sku-2210'"),
)


def _paths(rng: random.Random) -> list[tuple[str, int]]:
    """(path, lines) of CloudRetail's tracked files."""
    files = (
        "app/__init__.py app/main.py app/settings.py app/db/alloydb.py app/db/session.py app/cache/valkey.py "
        "app/cache/keys.py tests/conftest.py Makefile pyproject.toml README.md .github/workflows/ci.yml "
        ".github/workflows/deploy.yml"
    ).split()
    for m in _MODULES:
        files += [f"app/api/{m}.py", f"app/models/{m}.py", f"app/schemas/{m}.py", f"tests/api/test_{m}.py"]
    files += [f"app/services/{s}.py" for s in _SERVICES] + [f"tests/services/test_{s}.py" for s in _SERVICES]
    files += [f"app/db/migrations/versions/{i:04d}_{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}.py" for i in range(42)]
    files += [f"frontend/src/components/{c}.tsx" for c in _COMPONENTS]
    files += [f"frontend/src/components/{c}.test.tsx" for c in _COMPONENTS]
    files += [f"deploy/k8s/{m}-{kind}.yaml" for m in ("api", "worker", "search") for kind in ("deploy", "svc", "hpa")]
    return [(f, rng.randint(12, 640)) for f in sorted(files)]


def file_listing(rng: random.Random) -> str:
    paths = _paths(rng)
    lines = ["$ git ls-files | xargs wc -l"] + [f"{n:>6} {p}" for p, n in paths]
    lines.append(f"{sum(n for _, n in paths):>6} total")
    lines += ["", "$ git log --oneline -n 25"]
    lines += [
        f"{rng.getrandbits(28):07x} {rng.choice(_VERBS)} {rng.choice(_NOUNS)} in {rng.choice(_SERVICES)}"
        for _ in range(25)
    ]
    return "\n".join(lines)


def _test_ids(rng: random.Random, count: int) -> list[str]:
    ids = []
    for i in range(count):
        module = rng.choice(_SERVICES)
        folder = "api" if module in _MODULES and i % 3 else "services"
        param = f"[sku-{rng.randint(1000, 9999)}]" if rng.random() < 0.4 else ""
        ids.append(f"tests/{folder}/test_{module}.py::test_{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}{param}")
    return ids


def _traceback(rng: random.Random, test: str) -> list[str]:
    name = test.split("::")[1].split("[")[0]
    exc, message = rng.choice(_EXCEPTIONS)
    module = test.split("/")[-1].split(".")[0].removeprefix("test_")
    return [
        f"{'_' * 20} {name} {'_' * 20}",
        "",
        f"client = <starlette.testclient.TestClient object at 0x7f{rng.getrandbits(40):010x}>",
        f"{module}_factory = <function {module}_factory.<locals>.make at 0x7f{rng.getrandbits(40):010x}>",
        "",
        f"    async def {name}(client, {module}_factory):",
        f"        record = {module}_factory(count={rng.randint(2, 9)})",
        f'        response = await client.post("/v1/{module}", json=record.payload())',
        ">       assert response.status_code == 201",
        "E       assert 500 == 201",
        "E        +  where 500 = <Response [500 Internal Server Error]>.status_code",
        "",
        f"{test.split('::')[0]}:{rng.randint(20, 300)}: AssertionError",
        "----------------------------- Captured log call ------------------------------",
        f"ERROR    app.api.{module}:errors.py:{rng.randint(20, 90)} unhandled error on POST /v1/{module}",
        "Traceback (most recent call last):",
        f'  File "/srv/cloudretail/app/api/{module}.py", line {rng.randint(30, 400)}, in create',
        f"    result = await service.{rng.choice(_VERBS)}(payload, session=session)",
        f'  File "/srv/cloudretail/app/services/{module}.py", line {rng.randint(30, 400)}, in {rng.choice(_VERBS)}',
        f"    cached = await cache.get(keys.{module}(payload.id))",
        '  File "/srv/cloudretail/.venv/lib/python3.11/site-packages/valkey/asyncio/client.py", line 612, '
        "in execute_command",
        "    return await conn.retry.call_with_retry(",
        f"{exc}: {message}",
        "",
    ]


def pytest_log(rng: random.Random, *, tests: int, failures: int) -> str:
    ids = _test_ids(rng, tests)
    failed = set(rng.sample(range(tests), failures))
    lines = [
        "$ pytest -v --timeout=30 tests/",
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0 -- /srv/cloudretail/.venv/bin/python",
        "cachedir: .pytest_cache",
        "rootdir: /srv/cloudretail",
        "configfile: pyproject.toml",
        "plugins: timeout-2.3.1, asyncio-0.24.0, anyio-4.6.2, cov-5.0.0",
        "timeout: 30.0s",
        "timeout method: signal",
        f"collected {tests} items",
        "",
    ]
    for i, test in enumerate(ids):
        outcome = "FAILED" if i in failed else "PASSED"
        lines.append(f"{test} {outcome:<6} [{100 * (i + 1) // tests:>3}%]")
    if failed:
        lines += ["", "=================================== FAILURES ==================================="]
        for i in sorted(failed):
            lines += _traceback(rng, ids[i])
        lines.append("=========================== short test summary info ============================")
        lines += [f"FAILED {ids[i]} - assert 500 == 201" for i in sorted(failed)]
    slow = rng.sample(ids, 8)
    lines += ["", "============================= slowest 8 durations =============================="]
    lines += [f"{rng.uniform(0.4, 6.0):.2f}s call     {t}" for t in slow]
    summary = f"{failures} failed, {tests - failures} passed" if failures else f"{tests} passed"
    lines.append(f"======================== {summary} in {rng.uniform(30, 90):.2f}s ========================")
    return "\n".join(lines)


_CODE = (
    "    async with session.begin():",
    "        rows = await session.execute(select(OrderLine).where(OrderLine.order_id.in_(ids)))",
    "    total = sum((line.unit_price * line.quantity for line in lines), Decimal(0))",
    "    await cache.set(keys.cart(cart.id), cart.model_dump_json(), ex=CART_TTL_S)",
    "    if not reservation:",
    '        raise StockError(f"sku {sku} is out of stock")',
    "    return CartOut.model_validate(cart, from_attributes=True)",
    '    logger.info("cart %s updated: %d lines", cart.id, len(cart.lines))',
    "    tokens = index.tokens_for(product.id)",
    "    values = await cache.mget([keys.product(pid) for pid in ids])",
    "    query = query.options(selectinload(Order.lines).selectinload(OrderLine.product))",
    "def test_listing_issues_two_queries(client, order_factory, query_counter):",
    "    orders = [order_factory(lines=3) for _ in range(5)]",
    "    assert query_counter.count == 2",
    '    await cache.delete(*await cache.keys("reservation:*"))',
    '    price = Decimal(str(item["price"])).quantize(Decimal("0.01"))',
)


def git_diff(rng: random.Random, files: list[str], *, hunks: int = 3) -> str:
    lines = [f"$ git diff --stat && git diff   # {len(files)} files"]
    for path in files:
        lines += [
            f"diff --git a/{path} b/{path}",
            f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644",
            f"--- a/{path}",
            f"+++ b/{path}",
        ]
        start = rng.randint(10, 200)
        for _ in range(hunks):
            removed, added = rng.randint(2, 8), rng.randint(4, 14)
            lines.append(
                f"@@ -{start},{removed + 6} +{start},{added + 6} @@ async def {rng.choice(_VERBS)}_"
                f"{rng.choice(_NOUNS)}("
            )
            lines += [" " + rng.choice(_CODE) for _ in range(3)]
            lines += ["-" + rng.choice(_CODE) for _ in range(removed)]
            lines += ["+" + rng.choice(_CODE) for _ in range(added)]
            lines += [" " + rng.choice(_CODE) for _ in range(3)]
            start += rng.randint(30, 90)
    return "\n".join(lines)


def kubectl_pods(rng: random.Random) -> str:
    header = f"{'NAME':<42}{'READY':<8}{'STATUS':<10}{'RESTARTS':<10}{'AGE':<6}{'IP':<14}NODE"
    lines = ["$ kubectl get pods -n cloudretail -o wide --context gke_cloudretail_asia-southeast1_prod", header]
    pods = []
    for app in ("api", "worker", "search", "checkout", "inventory-sync", "promotions-cron"):
        for _ in range(rng.randint(4, 12)):
            pod = f"{app}-{rng.getrandbits(36):09x}-{rng.getrandbits(20):05x}"
            pods.append(pod)
            ip = f"10.{rng.randint(8, 60)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
            node = f"gke-cloudretail-prod-pool-{rng.randint(1, 3)}-{rng.getrandbits(24):06x}"
            lines.append(
                f"{pod:<42}{'1/1':<8}{'Running':<10}{rng.choice('000001'):<10}{rng.randint(1, 9)}d{'':<4}{ip:<14}{node}"
            )
    lines += ["", "$ kubectl top pods -n cloudretail", f"{'NAME':<42}{'CPU(cores)':<12}MEMORY(bytes)"]
    lines += [f"{pod:<42}{rng.randint(20, 950)}m{'':<8}{rng.randint(180, 1900)}Mi" for pod in pods]
    lines += ["", "$ kubectl get events -n cloudretail --sort-by=.lastTimestamp | tail -20"]
    for _ in range(20):
        lines.append(
            f"{rng.randint(1, 59)}m  Normal  {rng.choice(('Scheduled', 'Pulled', 'Created', 'Started'))}"
            f"  pod/{rng.choice(pods)}  {rng.choice(('Successfully assigned', 'Container image pulled'))}"
        )
    return "\n".join(lines)


def kubectl_logs(rng: random.Random, *, lines_count: int) -> str:
    lines = ["$ kubectl logs -n cloudretail deploy/checkout --since=12h --timestamps | tail -n 400"]
    for i in range(lines_count):
        stamp = (
            f"2025-06-{rng.randint(10, 11)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
        )
        path = f"/v1/{rng.choice(_MODULES)}"
        if i % 17 == 16:
            exc, message = _EXCEPTIONS[1]
            lines += [
                f'{stamp} {{"level":"ERROR","logger":"app.api.orders","msg":"unhandled","path":"{path}"}}',
                "Traceback (most recent call last):",
                f'  File "/srv/cloudretail/app/api/orders.py", line {rng.randint(40, 200)}, in list_orders',
                "    lines = await repo.lines_for(order.id)",
                '  File "/srv/cloudretail/.venv/lib/python3.11/site-packages/sqlalchemy/pool/impl.py", '
                "line 157, in _do_get",
                "    raise exc.TimeoutError(",
                f"{exc}: {message}",
            ]
        else:
            lines.append(
                f'{stamp} {{"level":"INFO","logger":"uvicorn.access","method":"GET","path":"{path}",'
                f'"status":200,"duration_ms":{rng.randint(40, 3900)},"pool_checked_out":{rng.randint(3, 30)}}}'
            )
    return "\n".join(lines)


def rsync_log(rng: random.Random) -> str:
    lines = [
        "$ rsync -avz --delete --checksum dist/ deploy@staging.cloudretail.internal:/srv/cloudretail/",
        "sending incremental file list",
    ]
    total = 0
    for path, _ in _paths(rng):
        if path.startswith(("app/", "frontend/")):
            size = rng.randint(800, 90_000)
            total += size
            lines.append(f"{path.replace('frontend/src', 'static')}  {size:>9,}")
    lines += [
        "",
        f"sent {total // 3:,} bytes  received {rng.randint(9_000, 30_000):,} bytes",
        f"total size is {total:,}  speedup is {rng.uniform(2, 4):.2f}",
        "$ curl -fsS https://staging.cloudretail.internal/healthz",
        '{"status":"ok","version":"2025.06.11-3"}',
    ]
    return "\n".join(lines)


def ci_log(rng: random.Random) -> str:
    lines = ["$ gh run view 9182 --log-failed   # workflow deploy.yml, job deploy-production"]
    for step in ("Set up job", "Checkout", "Set up Python 3.11", "Install dependencies", "Run tests"):
        lines.append(f"deploy-production  {step}  ##[group]{step}")
        for _ in range(rng.randint(12, 30)):
            lines.append(
                f"deploy-production  {step}  2025-06-11T02:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                f"Z  {rng.choice(('Collecting', 'Downloading', 'Using cached', 'Installed'))} "
                f"{rng.choice(('litestar', 'sqlalchemy', 'valkey', 'pydantic', 'uvicorn', 'httpx'))}"
                f"-{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
            )
    lines += [
        "deploy-production  Build frontend  skipped: no changes under frontend/",
        "deploy-production  Deploy  ##[group]Run rsync -avz --delete dist/ deploy@$HOST:/srv/cloudretail/",
        'deploy-production  Deploy  rsync: change_dir "/home/runner/work/cloudretail/dist" failed: '
        "No such file or directory (2)",
        "deploy-production  Deploy  rsync error: some files/attrs were not transferred (see previous errors) "
        "(code 23) at main.c(1338) [sender=3.2.7]",
        "deploy-production  Deploy  ##[error]Process completed with exit code 23.",
    ]
    return "\n".join(lines)


def profile(rng: random.Random) -> str:
    lines = [
        "$ python -m cProfile -s cumtime scripts/search_bench.py --catalog 50000 --queries 200",
        f"         {rng.randint(4, 9)}812331 function calls (4799123 primitive calls) in 128.4 seconds",
        "",
        "   Ordered by: cumulative time",
        "",
        "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)",
    ]
    funcs = [f"{m}.py:{rng.randint(10, 400)}({rng.choice(_VERBS)}_{rng.choice(_NOUNS)})" for m in _SERVICES * 8]
    funcs[:3] = ["search.py:88(rank_products)", "search.py:41(tokenize_title)", "client.py:612(execute_command)"]
    for i, func in enumerate(funcs):
        calls = rng.randint(200, 2_000_000)
        cum = 128.4 * 0.8**i
        lines.append(f"{calls:>9}  {cum * 0.3:7.3f}  {cum / calls:7.5f}  {cum:7.3f}  {cum / calls:7.5f} {func}")
    return "\n".join(lines)


# --- the conversation ---------------------------------------------------------------------------

Tool = Callable[[random.Random], str]


@dataclass(frozen=True)
class _Step:
    session: int
    role: Role
    body: str | Tool
    tool_name: str | None = None
    tool_status: ToolStatus | None = None


def _user(session: int, text: str) -> _Step:
    return _Step(session, "user", text)


def _agent(session: int, text: str) -> _Step:
    return _Step(session, "assistant", text)


def _tool(session: int, output: Tool, name: str, status: ToolStatus = "success") -> _Step:
    return _Step(session, "tool", output, name, status)


def _tests(tests: int, failures: int = 0) -> Tool:
    return lambda rng: pytest_log(rng, tests=tests, failures=failures)


def _diff(files: list[str], hunks: int) -> Tool:
    return lambda rng: git_diff(rng, files, hunks=hunks)


def _script() -> list[_Step]:
    cart = ["app/services/cart.py", "app/api/cart.py", "tests/conftest.py", "tests/api/test_cart.py"]
    orders = ["app/api/orders.py", "app/services/orders.py", "app/db/session.py", "tests/api/test_orders.py"]
    controller = ["app/controllers/orders.py", "app/main.py", "tests/api/test_orders.py"]
    search = ["app/services/search.py", "app/cache/keys.py", "tests/services/test_search.py"]
    # fmt: off
    return [
        _user(1, "Hi! Before we start, some preferences of mine. I prefer dark mode in every editor and terminal "
              "I use. I always write Python 3.11 and my default database is PostgreSQL. I like VS Code, not Vim."),
        _agent(1, "Thanks, that's clear. What are we working on?"),
        _user(1, "We're working on CloudRetail, our e-commerce backend. Project rule for CloudRetail: the backend "
              "is FastAPI running on AlloyDB. CloudRetail caches everything in Valkey; do not introduce another "
              "cache."),
        _agent(1, "Understood. Let me get an overview of the repository first."),
        _tool(1, file_listing, "shell"),
        _agent(1, "The repository has nine API modules under app/api, the database layer in app/db, the cache "
               "client in app/cache, 42 migrations and a React frontend. Shall I run the test suite?"),
        _user(1, "Yes. In CloudRetail every tool call gets a 30 second timeout, so run pytest with --timeout=30. "
              "CloudRetail is deployed only to the asia-southeast1 region. Deploy with rsync, not scp."),
        _agent(1, "Running the suite with --timeout=30."),
        _tool(1, _tests(190, failures=3), "pytest", "failure"),
        _agent(1, "187 passed, 3 failed. The cart failures come from totals computed with floats, and the checkout "
               "one from reservation keys left in the cache between tests. I suggest Decimal arithmetic for cart "
               "totals and flushing the reservation keys in the fixture."),
        _user(1, "Do both, and show me the diff before you commit."),
        _tool(1, _diff(cart, hunks=4), "git"),
        _tool(1, _tests(190), "pytest"),
        _agent(1, "All 190 tests pass. Committed as 'cart: Decimal totals, flush reservations between tests'."),
        _user(1, "Great work. Let's continue tomorrow with the checkout latency issue."),
        _user(2, "Morning! Checkout latency spiked overnight, p99 is above 3 seconds. Can you check the pods and "
              "the logs?"),
        _tool(2, kubectl_pods, "kubectl"),
        _tool(2, lambda rng: kubectl_logs(rng, lines_count=170), "kubectl"),
        _agent(2, "The pods are healthy, but the checkout logs show the connection pool running dry under load: the "
               "order listing issues one query per order line (an N+1) and holds connections for 800 ms and more. "
               "Loading the lines with one batched query should fix it."),
        _user(2, "Batch the query then, and add a regression test that counts the queries."),
        _tool(2, _diff(orders, hunks=4), "git"),
        _tool(2, _tests(194, failures=2), "pytest", "failure"),
        _agent(2, "The new test caught a third query: the lazily loaded product of each line. I added an eager load "
               "for it and ran the suite again."),
        _tool(2, _tests(194), "pytest"),
        _user(2, "Nice. By the way, we moved CloudRetail from FastAPI to Litestar. The migration branch is merged, "
              "so please port this fix to the new order controller too."),
        _tool(2, _diff(controller, hunks=3), "git"),
        _tool(2, _tests(196), "pytest"),
        _agent(2, "Ported to the order controller; all 196 tests pass."),
        _user(2, "Ship it to staging and tell me when it's up."),
        _tool(2, rsync_log, "rsync"),
        _user(3, "The production deploy of CloudRetail failed halfway through. What went wrong?"),
        _tool(3, ci_log, "gh"),
        _agent(3, "The deploy job failed at the transfer step: dist/ did not exist on the runner, because the build "
               "output is not committed and the workflow skips the frontend build when only backend files change. "
               "The transfer exited with code 23, so no host got the new static assets."),
        _user(3, "Add a check to the deploy workflow that fails early when dist/ is missing, and make the build step "
              "unconditional."),
        _tool(3, _diff([".github/workflows/deploy.yml", "Makefile"], hunks=2), "git"),
        _tool(3, _tests(196), "pytest"),
        _agent(3, "Done: the workflow always builds now, and a guard step stops with 'dist/ is missing: run make "
               "build' before anything is copied."),
        _user(3, "Next, product search feels slow on big catalogs. Profile it please."),
        _tool(3, profile, "python"),
        _agent(3, "Most of the time goes to rank_products, which tokenises every product title on each request, and "
               "to 1,200 single-key cache reads. Precomputing the tokens at index time and reading the keys in one "
               "round trip should bring p50 from 640 ms to under 100 ms."),
        _user(3, "Go ahead with both changes."),
        _tool(3, _diff(search, hunks=4), "git"),
        _tool(3, _tests(201), "pytest"),
        _agent(3, "Search p50 is 84 ms on the 50,000-product fixture and all 201 tests pass. Ready to release."),
        _user(3, "Then release CloudRetail to production. List every command you will run before running anything."),
    ]
    # fmt: on


def _clip(text: str) -> str:
    """Tool output cut at a line boundary, as agent runtimes truncate it."""
    if len(text) <= MAX_TOOL_CHARS:
        return text
    marker = "\n... [output truncated]"
    return text[: text.rfind("\n", 0, MAX_TOOL_CHARS - len(marker))] + marker


def build_conversation() -> list[Turn]:
    """The 45 turns, in order; the same text on every call."""
    turns = []
    for number, step in enumerate(_script(), start=1):
        content = step.body if isinstance(step.body, str) else _clip(step.body(random.Random(number)))
        turns.append(Turn(number, step.session, step.role, content, step.tool_name, step.tool_status))
    return turns
