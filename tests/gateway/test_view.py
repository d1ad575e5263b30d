"""The presentation pipeline in-process (`presentation.view` through `presentation.catalogue`): list order,
names, the reverse map, favourites and their reasons, the gate, the project schema and the
instructions. No subprocess, no `mcp` session."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from mcpctl.errors import InvalidResource
from mcpctl.presentation import names as nm
from mcpctl.presentation.builtins import (
    ALWAYS_LOAD,
    BEGIN_SESSION,
    BUILTIN_NAMES,
    CALL_TOOL,
    READ_RESULT,
    SEARCH_TOOL,
)
from mcpctl.presentation.catalogue import Catalogue
from mcpctl.presentation.view import Refusal, Route, SessionKey, View
from mcpctl.resources.kinds import FavouriteIndex, ProjectSpec
from mcpctl.resources.settings import NameSettings
from mcpctl.resources.validate import Validated, validate_document
from mcpctl.resources.yamlio import Document

PORTABLE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SPEC = re.compile(r"^[A-Za-z0-9_./-]+$")
ECHO_META = {"vendor/x": 1}


def _tool(name: str, server: str = "", **extra: Any) -> dict[str, Any]:
    """A wire tool whose description is its canonical id, so a listed entry says what it stands for."""
    return {"name": name, "description": f"{server}/{name}", "inputSchema": {"type": "object"}, **extra}


# Two servers; `echo` on both (the second without _meta), `delete_all` disabled by the fixtures.
LISTINGS: dict[str, list[dict[str, Any]]] = {
    "a": [_tool("echo", "a", _meta=ECHO_META), _tool("add", "a"), _tool("delete_all", "a")],
    "b": [_tool("echo", "b"), _tool("search", "b"), _tool("fetch", "b")],
}
ALL_IDS = [f"{s}/{t['name']}" for s, tools in LISTINGS.items() for t in tools]


def validated(**spec: Any) -> Validated:
    return validate_document(Document("<test>", 1, {"apiVersion": "mcpctl/v1", "kind": "Project",
                                                    "metadata": {"name": "p"}, "spec": spec}))


def project(**spec: Any) -> ProjectSpec:
    """A project as the store would hand it to the gateway: validated, then the typed view."""
    spec.setdefault("servers", list(LISTINGS))
    v = validated(**spec)
    return ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": v.spec})


def catalogue(spec: ProjectSpec, listings: dict[str, list[dict[str, Any]]] | None = None) -> Catalogue:
    cat = Catalogue("p", spec)
    cat.set_listings({s: {"tools": tools} for s, tools in (LISTINGS if listings is None else listings).items()})
    return cat


def upstream(view: View) -> list[dict[str, Any]]:
    return [t for t in view.tools if t["name"] not in BUILTIN_NAMES]


POINTER = re.compile(r"^Same tool as (\S+) \(a favourite, listed above\)")


def listed_ids(view: View) -> list[tuple[str, str]]:
    """(listed name, canonical id it was listed for) of every upstream entry; a listed favourite's
    `all` entry is a pointer to the favourite, which stands for the same tool."""
    out: list[tuple[str, str]] = []
    described = {t["name"]: t["description"] for t in upstream(view)}
    for entry in upstream(view):
        pointer = POINTER.match(entry["description"])
        out.append((entry["name"], described[pointer.group(1)] if pointer else entry["description"]))
    return out


def enabled_ids(spec: ProjectSpec) -> list[str]:
    from mcpctl.catalogue.curation import is_enabled

    return [cid for cid in ALL_IDS if is_enabled(cid, spec)]


def route_id(view: View, name: str) -> str | None:
    hit = view.resolve(name)
    return hit.tool.canonical_id if isinstance(hit, Route) else None


# -- list order per presentation --------------------------------------------------------------------


def test_flat_lists_search_tools_then_every_enabled_tool_as_server__tool() -> None:
    spec = project(tools={"disabled": ["a/delete_*"]})
    view = catalogue(spec).view()
    want = [cid.replace("/", "__") for cid in enabled_ids(spec)]
    assert view.mode == "flat"
    assert view.listed_names == [SEARCH_TOOL, READ_RESULT, *want]
    assert [t["description"] for t in upstream(view)] == enabled_ids(spec)
    assert view.favourites == []


@pytest.mark.parametrize("style", ["portable", "spec"])
def test_favourite_index_lists_pinned_favourites_then_search_tools_then_all(style: str) -> None:
    pinned = ["b/search", "a/echo", "b/fetch"]           # pinned order, not catalogue order
    spec = project(favouriteIndex={"enabled": True, "tools": pinned}, tools={"disabled": ["a/delete_*"]},
                   names={"style": style})
    view = catalogue(spec).view()
    sep = nm.SEP[style]
    favs = [f"favourite{sep}{cid.split('/')[1]}" for cid in pinned]
    alls = [f"all{sep}{cid.replace('/', sep)}" for cid in enabled_ids(spec)]
    assert view.mode == "favourite-index"
    assert view.listed_names == [*favs, SEARCH_TOOL, READ_RESULT, *alls]
    # each entry is the upstream tool it names (the description carries its canonical id); a
    # favourite is described once, its `all` entry points to the favourite name
    assert listed_ids(view) == list(zip([*favs, *alls], [*pinned, *enabled_ids(spec)], strict=True))
    by_name = {t["name"]: t for t in view.tools}
    for fav, cid in zip(favs, pinned, strict=True):
        pointer = by_name[f"all{sep}{cid.replace('/', sep)}"]
        assert pointer["description"].startswith(f"Same tool as {fav} ")
        assert by_name[fav]["description"] == cid
    for name, cid in zip([*favs, *alls], [*pinned, *enabled_ids(spec)], strict=True):
        assert route_id(view, name) == cid
    # a favourite is presented (search results, begin_session) under its favourite name
    assert view.present("a/echo") == favs[1] and view.present("a/add") == f"all{sep}a{sep}add"


@pytest.mark.parametrize("style", ["portable", "spec"])
def test_deferred_lists_favourites_search_and_call_tool_and_still_routes_the_long_tail(style: str) -> None:
    spec = project(presentation="deferred", favouriteIndex={"tools": ["a/add"]},
                   tools={"disabled": ["a/delete_*"]}, names={"style": style})
    view = catalogue(spec).view()
    sep = nm.SEP[style]
    assert view.mode == "deferred"
    assert view.listed_names == [f"favourite{sep}add", SEARCH_TOOL, CALL_TOOL, READ_RESULT]
    assert view.builtins == {SEARCH_TOOL, CALL_TOOL, READ_RESULT}
    # the long tail is not listed but reachable under its `all` name, the name search returns
    for cid in enabled_ids(spec):
        if cid == "a/add":
            continue
        name = f"all{sep}{cid.replace('/', sep)}"
        assert view.present(cid) == name
        assert route_id(view, name) == cid
    assert {t.canonical_id for t in view.searchable} == set(enabled_ids(spec))
    refused = view.resolve(f"all{sep}a{sep}delete_all")
    assert isinstance(refused, Refusal) and refused.error_class == "ToolDisabled"


def test_an_upstreams_own_always_load_is_never_passed_on() -> None:
    """`anthropic/alwaysLoad` is the gateway's to set (favourites, built-ins): an upstream that adds
    it to its tools' `_meta` (after approval; `_meta` is not pinned) gets it dropped, its other keys
    kept (before: passed to the client, every tool of that server always loaded, unreviewed)."""
    pushy = {"a": [_tool("echo", "a", _meta={ALWAYS_LOAD: True, "vendor/x": 1}), _tool("add", "a", _meta={ALWAYS_LOAD: True})],
             "b": [_tool("echo", "b")]}
    for spec in (project(), project(favouriteIndex={"enabled": True, "tools": ["b/echo"]}),
                 project(presentation="deferred", favouriteIndex={"tools": ["b/echo"]})):
        listed = {t["name"]: t for t in catalogue(spec, pushy).view().tools}
        from_a = {n: t for n, t in listed.items() if t.get("description", "").startswith("a/")}
        assert from_a or spec.presentation == "deferred"
        for name, item in from_a.items():
            assert ALWAYS_LOAD not in (item.get("_meta") or {}), (spec.presentation, name)
            assert item.get("_meta") == ({"vendor/x": 1} if name.endswith("echo") else None), name
    fav = {t["name"]: t for t in catalogue(project(favouriteIndex={"enabled": True, "tools": ["a/echo"]}), pushy)
           .view().tools}
    assert fav["favourite__echo"]["_meta"] == {"vendor/x": 1, ALWAYS_LOAD: True}   # the gateway's own mark
    assert pushy["a"][0]["_meta"] == {ALWAYS_LOAD: True, "vendor/x": 1}           # the listing is not mutated


def test_always_load_marks_favourites_and_builtins_and_keeps_the_upstream_meta() -> None:
    spec = project(favouriteIndex={"enabled": True, "tools": ["a/echo", "b/echo"]})
    cat = catalogue(spec)
    view = cat.view()
    by_name = {t["name"]: t for t in view.tools}
    for name in ("favourite__a__echo", "favourite__b__echo", SEARCH_TOOL):
        assert by_name[name]["_meta"][ALWAYS_LOAD] is True, name
    # the upstream's own _meta is kept and merged, and its dict is never mutated
    assert by_name["favourite__a__echo"]["_meta"] == {**ECHO_META, ALWAYS_LOAD: True}
    assert LISTINGS["a"][0]["_meta"] == ECHO_META and LISTINGS["a"][0]["name"] == "echo"
    assert all(ALWAYS_LOAD not in (t.get("_meta") or {}) for name, t in by_name.items() if name.startswith("all__"))
    # an `all` entry that is not a favourite's pointer keeps the upstream's _meta as it is
    unpinned = catalogue(project(favouriteIndex={"enabled": True, "tools": ["b/echo"]})).view()
    assert {t["name"]: t for t in unpinned.tools}["all__a__echo"]["_meta"] == ECHO_META
    deferred = catalogue(project(presentation="deferred", favouriteIndex={"tools": ["b/fetch"]})).view()
    assert all(t["_meta"][ALWAYS_LOAD] is True for t in deferred.tools)
    flat = catalogue(project()).view()
    assert [t["name"] for t in flat.tools if ALWAYS_LOAD in (t.get("_meta") or {})] == [SEARCH_TOOL]


def test_spec_style_uses_the_literal_slash_forms() -> None:
    listings = {"a": [_tool("echo", "a"), _tool("odd name:v2", "a")], "b": [_tool("fetch", "b")]}
    fav = catalogue(project(favouriteIndex={"enabled": True, "tools": ["a/echo"]}, names={"style": "spec"}),
                    listings).view()
    assert fav.listed_names[:5] == ["favourite/echo", SEARCH_TOOL, READ_RESULT, "all/a/echo", "all/a/odd_name_v2_"
                                    + nm.short_hash(nm.all_key("a/odd name:v2"))]
    assert "all/b/fetch" in fav.listed_names
    flat = catalogue(project(names={"style": "spec"}), listings).view()
    assert flat.listed_names[:3] == [SEARCH_TOOL, READ_RESULT, "a/echo"] and "b/fetch" in flat.listed_names
    assert all(SPEC.match(n) for n in fav.listed_names + flat.listed_names)


@pytest.mark.parametrize("max_length", [16, 30, 48])
@pytest.mark.parametrize("mode", ["flat", "favourite-index", "deferred"])
def test_portable_names_are_valid_client_names_within_max_length(mode: str, max_length: int) -> None:
    odd = ["read.file/v2", "has space", "ünïcode-naïve", "x" * 90, "a:b@c", "plain", "-dash-", "__"]
    listings = {"alpha-server": [_tool(n, "alpha-server") for n in odd], "b": [_tool(n, "b") for n in odd[:3]]}
    pinned = ["alpha-server/plain", "alpha-server/read.file/v2", "b/read.file/v2"]
    spec = ProjectSpec("p", servers=("alpha-server", "b"), presentation=mode,
                       favourite_index=FavouriteIndex(mode != "flat", tuple(pinned)),
                       names=NameSettings("portable", max_length))
    view = catalogue(spec, listings).view()
    every = set(view.table.names.values())           # listed or only reachable (deferred)
    assert len(every) == len(view.table.names)
    for name in every | set(view.listed_names):
        assert PORTABLE.match(name) and len(name) <= max_length, name
    for name, cid in view.table.names.items():
        assert route_id(view, cid) == name[1]
    for name, cid in listed_ids(view):
        assert route_id(view, name) == cid, name


# -- the reverse map ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["favourite-index", "deferred"])
def test_every_form_of_a_name_resolves_to_the_same_canonical_id(mode: str) -> None:
    spec = project(presentation=mode, favouriteIndex={"tools": ["a/add", "b/echo", "a/echo"]})
    view = catalogue(spec).view()
    forms = {
        "a/add": ["favourite__add", "all__a__add", "a/add", "favourite/add", "all/a/add", "a__add"],
        "b/echo": ["favourite__b__echo", "all__b__echo", "b/echo", "favourite/b/echo", "all/b/echo", "b__echo"],
        "b/search": ["all__b__search", "b/search", "all/b/search", "b__search"],
    }
    for cid, names in forms.items():
        for name in names:
            hit = view.resolve(name)
            assert isinstance(hit, Route), (name, hit)
            assert hit.tool.canonical_id == cid and hit.presented == name
    assert view.resolve("favourite__search") is None          # not pinned: no favourite form
    assert view.resolve("nope") is None and view.resolve("all__c__echo") is None


def test_an_ambiguous_alias_resolves_to_nothing() -> None:
    # Two tools whose unqualified favourite form is the same (`favourite__echo`): pinned together
    # they are listed server-qualified, and the bare form routes to neither, never to a guess.
    view = catalogue(project(favouriteIndex={"enabled": True, "tools": ["a/echo", "b/echo"]})).view()
    assert "favourite__echo" not in view.listed_names
    assert view.resolve("favourite__echo") is None and view.resolve("favourite/echo") is None
    # a tool named like another's mapped flat form: in favourite-index mode both flat aliases are
    # the same string, claimed by two tools
    mapped = nm.fit("s__a.b", nm.flat_key("s/a.b"), 48)
    clash = mapped.removeprefix("s__")
    listings = {"s": [_tool("a.b", "s"), _tool(clash, "s")]}
    spec = ProjectSpec("p", servers=("s",), presentation="favourite-index", favourite_index=FavouriteIndex(True))
    view = catalogue(spec, listings).view()
    assert view.resolve(mapped) is None
    assert route_id(view, "s/a.b") == "s/a.b" and route_id(view, f"s/{clash}") == f"s/{clash}"
    # the same two tools in flat mode: both listed under distinct names, the clashing form is not one
    flat = catalogue(ProjectSpec("p", servers=("s",)), listings).view()
    names = upstream(flat)
    assert len({t["name"] for t in names}) == 2 and mapped not in {t["name"] for t in names}
    for name, cid in listed_ids(flat):
        assert route_id(flat, name) == cid


@pytest.mark.parametrize("style", ["portable", "spec"])
@pytest.mark.parametrize("mode", ["flat", "favourite-index", "deferred"])
def test_a_canonical_id_always_reaches_its_own_tool(mode: str, style: str) -> None:
    # In spec style `all/x/y` is both x/y's `all` name and the canonical id of the tool `x/y` of a
    # server named `all` (likewise `favourite/echo`): the presented name must give way.
    listings = {"all": [_tool("x/y", "all"), _tool("echo", "all")], "favourite": [_tool("echo", "favourite")],
                "x": [_tool("y", "x"), _tool("echo", "x")]}
    spec = ProjectSpec("p", servers=tuple(listings), presentation=mode, names=NameSettings(style),
                       favourite_index=FavouriteIndex(mode != "flat", ("x/echo", "x/y")))
    view = catalogue(spec, listings).view()
    assert len(set(view.listed_names)) == len(view.listed_names)
    for server, tools in listings.items():
        for tool in tools:
            cid = f"{server}/{tool['name']}"
            assert route_id(view, cid) == cid
            assert route_id(view, view.present(cid) or "") == cid
    for name, cid in listed_ids(view):
        assert route_id(view, name) == cid, name


# -- favourites and their reasons --------------------------------------------------------------------


def test_a_disabled_favourite_is_not_listed_and_calling_it_is_refused() -> None:
    spec = project(favouriteIndex={"enabled": True, "tools": ["a/delete_all", "a/add"]},
                   tools={"disabled": ["a/delete_*"]})
    view = catalogue(spec).view()
    assert view.listed_names[:2] == ["favourite__add", SEARCH_TOOL]
    assert "favourite__delete_all" not in view.listed_names and "all__a__delete_all" not in view.listed_names
    fav = {f.canonical_id: f for f in view.favourites}
    assert fav["a/delete_all"].listed is False and "tools.disabled" in (fav["a/delete_all"].reason or "")
    assert fav["a/add"].listed is True and fav["a/add"].reason is None and fav["a/add"].name == "favourite__add"
    for name in ("favourite__delete_all", "all__a__delete_all", "a/delete_all", "favourite/delete_all"):
        refused = view.resolve(name)
        assert isinstance(refused, Refusal), name
        assert (refused.outcome, refused.error_class) == ("denied", "ToolDisabled")
        assert "disabled" in refused.message and "a/delete_all" in refused.message
    assert "a/delete_all" not in {t.canonical_id for t in view.searchable}


def test_favourites_of_a_down_missing_or_unlisted_server_are_left_out_with_a_reason() -> None:
    pinned = ["a/echo", "b/fetch", "c/thing", "a/no_such_tool", "d/anything"]
    spec = ProjectSpec("p", servers=("a", "b", "d"), presentation="favourite-index",
                       favourite_index=FavouriteIndex(True, tuple(pinned)))
    cat = catalogue(spec)                                    # d is in the project but never listed
    reasons = {f.canonical_id: f.reason for f in cat.view().favourites}
    assert reasons["a/echo"] is None and reasons["b/fetch"] is None
    assert "not one of the project's servers" in (reasons["c/thing"] or "")
    assert "no tool 'a/no_such_tool'" in (reasons["a/no_such_tool"] or "")
    assert "not been listed" in (reasons["d/anything"] or "")
    # the instructions go out once, often before a first listing: they name it all the same
    assert "favourite__anything" in cat.instructions and "favourite__thing" not in cat.instructions
    assert cat.set_down({"b": "command not found: nope"})
    view = cat.view()
    fav = {f.canonical_id: f for f in view.favourites}
    assert fav["b/fetch"].listed is False
    assert "down" in (fav["b/fetch"].reason or "") and "command not found" in (fav["b/fetch"].reason or "")
    assert [t["name"] for t in view.tools if t["name"].startswith("favourite__")] == ["favourite__echo"]
    assert [f.canonical_id for f in view.favourites if f.listed] == ["a/echo"]
    assert "favourite__echo" in cat.instructions and "favourite__fetch" not in cat.instructions


def test_favourites_over_max_favourites_are_left_out_with_a_reason() -> None:
    # validation refuses this; the pipeline still never lists more than maxFavourites
    spec = ProjectSpec("p", servers=("a", "b"), presentation="favourite-index",
                       favourite_index=FavouriteIndex(True, ("a/echo", "a/add", "b/fetch"), max_favourites=2))
    view = catalogue(spec).view()
    assert [f.listed for f in view.favourites] == [True, True, False]
    assert "maxFavourites" in (view.favourites[2].reason or "")
    assert view.listed_names[:3] == ["favourite__echo", "favourite__add", SEARCH_TOOL]


def test_two_favourites_with_the_same_tool_name_get_server_qualified_names_stable_in_any_order() -> None:
    seen: set[tuple[tuple[str, str], ...]] = set()
    for pinned in itertools.permutations(["a/echo", "b/echo", "a/add"]):
        for order in itertools.permutations(["a", "b"]):
            spec = project(servers=list(order), favouriteIndex={"enabled": True, "tools": list(pinned)})
            listings = {s: list(reversed(LISTINGS[s])) if order[0] == "b" else LISTINGS[s] for s in order}
            cat = catalogue(spec, listings)
            view = cat.view()
            favs = {f.canonical_id: f.name for f in view.favourites}
            assert favs == {"a/echo": "favourite__a__echo", "b/echo": "favourite__b__echo", "a/add": "favourite__add"}
            assert route_id(view, "favourite__a__echo") == "a/echo"
            assert route_id(view, "favourite__b__echo") == "b/echo"
            cat.rebuild()                                 # re-built: the same names
            assert {f.canonical_id: f.name for f in cat.view().favourites} == favs
            seen.add(tuple(sorted(favs.items())))
    assert len(seen) == 1
    # disabling one of them renames neither: names do not depend on curation
    spec = project(favouriteIndex={"enabled": True, "tools": ["a/echo", "b/echo"]}, tools={"disabled": ["b/echo"]})
    view = catalogue(spec).view()
    assert [f.name for f in view.favourites] == ["favourite__a__echo", "favourite__b__echo"]
    assert view.listed_names[0] == "favourite__a__echo" and "favourite__b__echo" not in view.listed_names


# -- names are unique by construction ------------------------------------------------------------------


SEEDS = ("a.b", "a/b", "a b", "ünï", "x" * 80, "a_b", SEARCH_TOOL, BEGIN_SESSION, CALL_TOOL)
REPORTED = ("a_b_f2d2ce76_", "a_b_f2d2ce76", "a.b")     # the reported duplicate and misroute


def adversarial_names(servers: Sequence[str], style: str, max_length: int, salts: int = 3) -> list[str]:
    """Tool names built from the naming scheme itself: for each seed, the names that a mapped,
    cut or re-hashed (salted) slot name of another tool would come out as, so that taken
    literally they request exactly that presented name."""
    namer = nm.Namer(style, max_length)
    sep = namer.sep
    out = set(SEEDS) | set(REPORTED)
    for server, seed in itertools.product(servers, SEEDS):
        cid = f"{server}/{seed}"
        slots = [(namer.flat(server, seed), nm.flat_key(cid), f"{server}{sep}"),
                 (namer.all(server, seed), nm.all_key(cid), f"all{sep}{server}{sep}"),
                 (namer.favourite(server, seed), nm.favourite_key(cid), f"favourite{sep}"),
                 (namer.favourite(server, seed, qualified=True), nm.favourite_key(cid), f"favourite{sep}{server}{sep}")]
        for (raw, key, prefix), salt in itertools.product(slots, range(salts)):
            fitted = nm.fit(raw, key, max_length, style, salt)
            if fitted.startswith(prefix) and len(fitted) > len(prefix):
                out.add(fitted[len(prefix):])
                out.add(fitted[len(prefix):] + "_")
    return sorted(out)


def _signature(cat: Catalogue, style: str) -> dict[str, Any]:
    """Check one built catalogue and return what must not depend on the listing order."""
    view = cat.view()
    listed = view.listed_names
    assert len(listed) == len(set(listed)), [n for n in listed if listed.count(n) > 1]
    every = list(view.table.names.values())                 # every slot, listed or only reachable
    assert len(every) == len(set(every))
    assert not (set(every) & BUILTIN_NAMES)
    valid = PORTABLE if style == "portable" else SPEC
    for name in every:
        assert valid.match(name) and len(name) <= cat.project.names.max_length, name
    for name, cid in listed_ids(view):
        assert route_id(view, name) == cid, name
    for (_kind, cid), name in view.table.names.items():
        assert route_id(view, name) == cid, name
    for name in BUILTIN_NAMES & set(listed):
        assert view.resolve(name) is None or name not in view.builtins
    return {"listed": sorted(listed_ids(view)),
            "names": dict(view.table.names), "present": {t.canonical_id: view.present(t.canonical_id)
                                                          for t in cat.tools}}


def _check_orders(spec: ProjectSpec, tools: dict[str, list[str]], orders: Iterable[dict[str, list[str]]]) -> int:
    reference: dict[str, Any] | None = None
    n = 0
    for order in orders:
        cat = catalogue(spec, {s: [_tool(t, s) for t in names] for s, names in order.items()})
        assert len(cat.tools) == sum(len(set(v)) for v in tools.values())
        sig = _signature(cat, spec.names.style)
        if reference is None:
            reference = sig
        assert sig == reference
        n += 1
    return n


@pytest.mark.parametrize("style", ["portable", "spec"])
@pytest.mark.parametrize("mode", ["flat", "favourite-index", "deferred"])
def test_the_reported_collision_cannot_happen_in_any_listing_order(mode: str, style: str) -> None:
    # `a.b` maps onto the literal name of another tool, in the slot this mode lists (flat or
    # all) and in its favourite slot; every permutation of the listing
    namer, sep = nm.Namer(style), nm.SEP[style]
    odd = "a.b" if style == "portable" else "a:b"           # mapped in this style
    if mode == "flat":
        slot = nm.fit(namer.flat("a", odd), nm.flat_key(f"a/{odd}"), 48, style).removeprefix(f"a{sep}")
    else:
        slot = nm.fit(namer.all("a", odd), nm.all_key(f"a/{odd}"), 48, style).removeprefix(f"all{sep}a{sep}")
    fav = nm.fit(namer.favourite("a", odd), nm.favourite_key(f"a/{odd}"), 48, style).removeprefix(f"favourite{sep}")
    tools = {"a": sorted({*REPORTED, odd, slot, fav})}
    assert len(tools["a"]) <= 6
    spec = ProjectSpec("p", servers=("a",), presentation=mode,
                       favourite_index=FavouriteIndex(mode != "flat", (f"a/{odd}", f"a/{fav}", "a/a_b_f2d2ce76")),
                       names=NameSettings(style))
    orders = ({"a": list(p)} for p in itertools.permutations(tools["a"]))
    assert _check_orders(spec, tools, orders) == math.factorial(len(tools["a"]))


@pytest.mark.parametrize("style", ["portable", "spec"])
@pytest.mark.parametrize("mode", ["flat", "favourite-index", "deferred"])
def test_names_are_unique_by_construction_whatever_the_input_and_its_order(mode: str, style: str) -> None:
    max_length = 32
    servers = ("s", "t")
    names = adversarial_names(servers, style, max_length)
    tools = {"s": names, "t": [n for n in names if len(n) % 2 == 0] + list(SEEDS)}
    tools["t"] = sorted(set(tools["t"]))
    pinned = tuple(f"{s}/{n}" for s in servers for n in ("a.b", "a/b", "x" * 80, SEARCH_TOOL))
    spec = ProjectSpec("p", servers=servers, presentation=mode,
                       favourite_index=FavouriteIndex(mode != "flat", pinned, max_favourites=len(pinned)),
                       names=NameSettings(style, max_length))
    rng = random.Random(986)

    def orders() -> Iterable[dict[str, list[str]]]:
        yield {s: list(v) for s, v in tools.items()}
        for _ in range(50):
            yield {s: rng.sample(v, len(v)) for s, v in tools.items()}

    assert _check_orders(spec, tools, orders()) == 51


@pytest.mark.parametrize("style", ["portable", "spec"])
def test_prompt_names_are_unique_by_construction_in_any_order(style: str) -> None:
    max_length = 32
    namer = nm.Namer(style, max_length)
    seeds = ["p.q", "p_q_8157e0f8", "p q", "y" * 70, "ünï"]
    prompts = {s: set(seeds) for s in ("s", "t")}
    for server, seed, salt in itertools.product(("s", "t"), seeds, range(3)):
        fitted = nm.fit(namer.prompt(server, seed), nm.prompt_key(server, seed), max_length, style, salt)
        for target in ("s", "t"):
            prefix = f"{target}{namer.sep}"
            if fitted.startswith(prefix):
                prompts[target] |= {fitted[len(prefix):], fitted[len(prefix):] + "_"}
    spec = ProjectSpec("p", servers=("s", "t"), names=NameSettings(style, max_length))
    valid = PORTABLE if style == "portable" else SPEC
    rng = random.Random(8157)
    reference: dict[str, tuple[str, str]] | None = None
    for i in range(51):
        cat = Catalogue("p", spec)
        cat.set_listings({s: {"prompts": [{"name": n} for n in (sorted(v) if i == 0 else rng.sample(sorted(v), len(v)))]}
                          for s, v in prompts.items()})
        presented = {name: (server, raw) for name, (server, raw, _) in cat.prompts.items()}
        assert len(presented) == sum(len(v) for v in prompts.values())        # none lost to a clash
        assert {(s, n) for s, n in presented.values()} == {(s, n) for s, v in prompts.items() for n in v}
        assert all(valid.match(n) and len(n) <= max_length for n in presented)
        assert [p["name"] for p in cat.prompt_list()] == list(cat.prompts)
        if reference is None:
            reference = presented
        assert presented == reference


# -- the gate -----------------------------------------------------------------------------------------


def test_a_gated_session_sees_only_begin_session_and_every_call_is_refused() -> None:
    spec = project(favouriteIndex={"enabled": True, "tools": ["a/echo"]}, gate={"enabled": True,
                                                                              "instructions": "Be careful."})
    cat = catalogue(spec)
    gated = cat.view(SessionKey(gated=True))
    assert gated.listed_names == [BEGIN_SESSION]
    assert gated.tools[0]["_meta"][ALWAYS_LOAD] is True
    assert gated.builtins == {BEGIN_SESSION}
    for name in ("favourite__echo", "all__a__add", "a/add"):
        refused = gated.resolve(name)
        assert isinstance(refused, Refusal) and refused.error_class == "SessionGated"
        assert BEGIN_SESSION in refused.message
    begun = cat.view(SessionKey(gated=False))
    assert begun.listed_names[:2] == ["favourite__echo", SEARCH_TOOL] and BEGIN_SESSION not in begun.listed_names
    assert BEGIN_SESSION in begun.builtins                   # still answers (a new task's briefing)
    assert route_id(begun, "favourite__echo") == "a/echo"
    # without the gate, a "gated" key sees the full list
    ungated = catalogue(project(favouriteIndex={"enabled": True, "tools": ["a/echo"]}))
    assert ungated.view(SessionKey(gated=True)).listed_names == ungated.view().listed_names


# -- the project schema ------------------------------------------------------------------------------


def _error(**spec: Any) -> str:
    spec.setdefault("servers", ["a", "b"])
    with pytest.raises(InvalidResource) as e:
        validated(**spec)
    return f"{e.value.message} {e.value.hint or ''}"


def test_contradicting_presentation_settings_are_errors_naming_both_fields() -> None:
    text = _error(presentation="flat", favouriteIndex={"enabled": True})
    assert "spec.presentation" in text and "spec.favouriteIndex.enabled" in text
    for mode in ("deferred", "favourite-index"):
        text = _error(presentation=mode, favouriteIndex={"enabled": False, "tools": ["a/echo"]})
        assert "spec.presentation" in text and "spec.favouriteIndex.enabled" in text and mode in text


def test_favourite_list_errors_name_the_fields() -> None:
    text = _error(favouriteIndex={"enabled": True, "tools": ["a/echo", "a/add", "b/fetch"], "maxFavourites": 2})
    assert "spec.favouriteIndex.tools" in text and "spec.favouriteIndex.maxFavourites" in text
    text = _error(favouriteIndex={"enabled": True, "tools": ["a/get_*"]})
    assert "glob" in text and "a/get_*" in text
    text = _error(favouriteIndex={"enabled": True, "tools": ["a/echo", "b/fetch", "a/echo"]})
    assert "pinned twice" in text and "tools[2]" in text and "tools[0]" in text
    text = _error(presentation="deferred", favouriteIndex={"tools": ["a/echo"]}, search={"enabled": False})
    assert "spec.search.enabled" in text and "deferred" in text


def test_deferred_with_many_favourites_warns_and_enabled_alone_means_favourite_index() -> None:
    eleven = [f"a/t{i}" for i in range(11)]
    v = validated(servers=["a"], presentation="deferred", favouriteIndex={"tools": eleven})
    assert any("11" in w and "3-5" in w for w in v.warnings), v.warnings
    assert not validated(servers=["a"], presentation="deferred", favouriteIndex={"tools": eleven[:5]}).warnings
    assert project(favouriteIndex={"enabled": True}).presentation == "favourite-index"
    assert project(favouriteIndex={"tools": ["a/echo"]}).presentation == "flat"
    assert project(presentation="deferred").favourite_index.enabled is True
    assert project().presentation == "flat" and project().favourite_index.enabled is False


# -- the instructions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("gate", [False, True])
def test_instructions_prefer_favourites_and_list_them_in_the_project_style(gate: bool) -> None:
    pinned = {"favouriteIndex": {"enabled": True, "tools": ["a/add", "b/fetch", "a/delete_all"]},
              "tools": {"disabled": ["a/delete_*"]}, "gate": {"enabled": gate}}
    text = catalogue(project(**pinned)).instructions
    assert ("PREFER favourite__<tool> when one fits; use all__<server>__<tool> only if nothing in favourites "
            "fits") in text
    assert "favourite__add, favourite__fetch." in text and "delete_all" not in text
    spec_text = catalogue(project(**pinned, names={"style": "spec"})).instructions
    assert "PREFER favourite/<tool> when one fits; use all/<server>/<tool> only if nothing in favourites fits" in spec_text
    assert "favourite/add, favourite/fetch." in spec_text
    for t in (text, spec_text):
        assert (BEGIN_SESSION in t and "before anything else" in t) is gate
        if gate:                                   # the gate's line comes first
            assert t.index(BEGIN_SESSION) < t.index("PREFER")
    deferred = catalogue(project(presentation="deferred", favouriteIndex={"tools": ["a/add"]})).instructions
    assert "favourite__add" in deferred and "search_tools" in deferred and "call_tool(name, arguments)" in deferred
    flat = catalogue(project()).instructions
    assert "<server>__<tool>" in flat and "PREFER" not in flat
