from __future__ import annotations

import threading

import pytest

from copilot_host import Catalog, RouteCollisionError
from tests.core._routes import make_route, make_routes


def test_add_get_and_owners() -> None:
    catalog = Catalog()
    catalog.add_routes([make_route("hand/a")])
    catalog.add_routes(make_routes("p", 2), owner="p")
    assert set(catalog.routes()) == {"hand/a", "p/m0-0", "p/m0-1"}
    assert catalog.get("hand/a") is not None and catalog.get("nope") is None
    assert catalog.owner_of("hand/a") is None
    assert catalog.owner_of("p/m0-1") == "p"
    assert set(catalog.owned_by("p")) == {"p/m0-0", "p/m0-1"}
    assert len(catalog) == 3 and "p/m0-0" in catalog


def test_snapshots_are_immutable_and_stable() -> None:
    catalog = Catalog()
    catalog.add_routes(make_routes("p", 3), owner="p")
    snap = catalog.routes()
    with pytest.raises(TypeError):
        snap["x"] = make_route("x")  # type: ignore[index]
    catalog.replace_provider("p", make_routes("p", 1, generation=1))
    assert len(snap) == 3  # an old snapshot never changes under its reader
    assert set(catalog.routes()) == {"p/m1-0"}


def test_collisions_raise_and_change_nothing() -> None:
    catalog = Catalog()
    catalog.add_routes([make_route("github-copilot/gpt-4o")])  # by hand, no owner
    catalog.add_routes(make_routes("other", 2), owner="other")
    before = catalog.routes()
    with pytest.raises(RouteCollisionError):
        catalog.replace_provider("github-copilot", [make_route("github-copilot/gpt-4o")])
    with pytest.raises(RouteCollisionError):
        catalog.add_routes([make_route("fresh/x"), make_route("other/m0-1")], owner="fresh")
    with pytest.raises(RouteCollisionError):
        catalog.add_routes([make_route("dup/x"), make_route("dup/x")])
    with pytest.raises(RouteCollisionError):
        catalog.replace_provider("other", [make_route("other/y"), make_route("other/y")])
    assert catalog.routes() is before


def test_replace_provider_swaps_only_that_owner() -> None:
    catalog = Catalog()
    catalog.add_routes([make_route("hand/a")])
    catalog.replace_provider("p", make_routes("p", 3))
    catalog.replace_provider("q", make_routes("q", 2))
    catalog.replace_provider("p", make_routes("p", 1, generation=7))
    assert set(catalog.routes()) == {"hand/a", "p/m7-0", "q/m0-0", "q/m0-1"}
    assert catalog.remove_provider("q") == 2
    assert catalog.remove_provider("q") == 0
    assert set(catalog.routes()) == {"hand/a", "p/m7-0"}
    with pytest.raises(ValueError):
        catalog.replace_provider("", [])


def test_catalog_refuses_non_routes() -> None:
    catalog = Catalog()
    with pytest.raises(TypeError):
        catalog.add_routes(["not a route"])  # type: ignore[list-item]
    assert len(catalog) == 0


def test_readers_never_see_a_partial_set_under_load() -> None:
    """8 readers snapshot continuously while 200 swaps replace a 500-route set."""
    catalog = Catalog()
    catalog.add_routes([make_route("hand/keep")])
    sets = {g: make_routes("p", 500, generation=g) for g in range(4)}
    catalog.replace_provider("p", sets[0])
    expected = {g: frozenset(r.route_id for r in routes) for g, routes in sets.items()}
    stop = threading.Event()
    problems: list[str] = []
    seen = [0] * 8

    def reader(n: int) -> None:
        while not stop.is_set():
            snap = catalog.routes()
            ids = set(snap)
            if "hand/keep" not in ids:
                problems.append("hand-added route vanished")
                return
            ids.discard("hand/keep")
            if frozenset(ids) not in expected.values():
                problems.append(f"partial set of {len(ids)} routes")
                return
            seen[n] += 1

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    failed_before = None
    try:
        for i in range(200):
            catalog.replace_provider("p", sets[(i + 1) % 4])
            if i % 50 == 0:
                failed_before = catalog.routes()
                with pytest.raises(RouteCollisionError):
                    catalog.replace_provider("p", [*sets[2], make_route("hand/keep")])
                assert catalog.routes() is failed_before  # the identical snapshot object
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert problems == []
    assert all(count > 0 for count in seen)
