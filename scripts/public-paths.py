#!/usr/bin/env python3
"""Public paths and items of each library crate, and the guard that each
item has one public path.

rustdoc's JSON output (nightly: `-Z unstable-options --output-format json`,
all features, as the `tbrw` command builds the crates) is read and the
public paths are walked from the crate root: each public item defined in a
public module, each `pub use` (a glob's items too), each public module
recursed into at the path it was reached by. Items hidden from the docs
(`#[doc(hidden)]`) are not in rustdoc's output and are not counted: they
are not part of a crate's front (each crate's README says so).

An item of the crate reached at two or more paths (a module's path and a
root `pub use`, say) is a duplicate. Re-exports of another crate's items
(the foreign types a crate's signatures name, `tbrw_export::tbrw_query`)
are counted apart, not walked into, and are duplicates only when the same
foreign item is re-exported at two paths of the crate.

    scripts/public-paths.py [--check] [--list] [--target-dir DIR] [CRATE ...]

Prints, per crate, its public paths, distinct items and foreign
re-exports; `--list` prints every path; `--check` exits 1 when an item has
more than one public path (printing crate, item and paths). The rustdoc
build goes to `target/public-paths` of the workspace by default (CI keeps
it between runs).
"""

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from library_crates import CRATES  # noqa: E402 (beside this script)


def build_json(crates, target_dir):
    """rustdoc JSON of `crates` (one cargo run, all features)."""
    env = dict(os.environ)
    env["RUSTDOCFLAGS"] = "-Z unstable-options --output-format json"
    env.setdefault("CARGO_INCREMENTAL", "0")
    cmd = ["cargo", "+nightly", "doc", "--no-deps", "--all-features", "--lib", "--quiet", "--target-dir", target_dir]
    for crate in crates:
        cmd += ["-p", crate]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)


def walk(doc):
    """(own, foreign): public paths of the crate's own items and of the
    foreign items it re-exports, each as {item key: [paths]}."""
    index = doc["index"]
    paths = doc["paths"]
    own = defaultdict(list)
    foreign = defaultdict(list)

    def item(item_id):
        return index.get(str(item_id))

    def is_own(item_id):
        it = item(item_id)
        if it is not None:
            return it["crate_id"] == 0
        summary = paths.get(str(item_id))
        return summary is not None and summary["crate_id"] == 0

    def foreign_key(item_id, name):
        summary = paths.get(str(item_id))
        if summary is not None:
            return "::".join(summary["path"])
        return name

    def visit_module(module_id, prefix, seen):
        if module_id in seen:
            return
        seen = seen | {module_id}
        module = item(module_id)
        for child_id in module["inner"]["module"]["items"]:
            visit(child_id, prefix, seen)

    def visit(item_id, prefix, seen):
        it = item(item_id)
        if it is None or it["visibility"] != "public":
            return
        inner = it["inner"]
        if "use" in inner:
            use = inner["use"]
            target = use["id"]
            if use["is_glob"]:
                target_item = item(target) if target is not None else None
                if target_item is not None and "module" in target_item["inner"] and is_own(target):
                    visit_module(target, prefix, seen)
                else:
                    add(foreign, foreign_key(target, use["source"]) + "::*", prefix + "::*")
                return
            path = prefix + "::" + use["name"]
            if target is None or not is_own(target):
                add(foreign, foreign_key(target, use["source"]), path)
                return
            record(target, path, seen)
            return
        if it["name"] is None:
            return
        record(item_id, prefix + "::" + it["name"], seen)

    def add(table, key, path):
        # A name reached twice at the same path (an explicit re-export and a
        # glob of the same module) is one path, as Rust resolves it.
        if path not in table[key]:
            table[key].append(path)

    def record(item_id, path, seen):
        if path in own[item_id]:
            return
        own[item_id].append(path)
        it = item(item_id)
        if it is not None and "module" in it["inner"]:
            visit_module(item_id, path, seen)

    root = doc["root"]
    visit_module(root, item(root)["name"], frozenset())
    return own, foreign


def self_test():
    """The walk on a small document of rustdoc's shape: an item defined in a
    public module and re-exported at the root has two paths; one in a
    private module re-exported once has one; a glob re-export gives its
    module's items; a foreign re-export is counted apart."""

    def module(i, name, items, public=True):
        vis = "public" if public else "crate"
        return {"id": i, "crate_id": 0, "name": name, "visibility": vis,
                "inner": {"module": {"is_crate": False, "items": items, "is_stripped": False}}}

    def struct(i, name):
        return {"id": i, "crate_id": 0, "name": name, "visibility": "public", "inner": {"struct": {}}}

    def use(i, source, name, target, glob=False):
        return {"id": i, "crate_id": 0, "name": None, "visibility": "public",
                "inner": {"use": {"source": source, "name": name, "id": target, "is_glob": glob}}}

    index = [
        module(0, "k", [1, 3, 10, 5, 7, 8, 20]),
        module(1, "shown", [2]),
        struct(2, "Twice"),
        module(3, "hidden", [4, 6], public=False),
        struct(4, "Once"),
        use(10, "shown::Twice", "Twice", 2),
        use(5, "hidden::Once", "Once", 4),
        struct(6, "Globbed"),
        use(7, "hidden::*", "hidden", 3, glob=True),
        use(8, "other::Foreign", "Foreign", 99),
        use(20, "other::Foreign", "Again", 99),
    ]
    doc = {"root": 0, "index": {str(it["id"]): it for it in index},
           "paths": {"99": {"crate_id": 1, "path": ["other", "Foreign"], "kind": "struct"}}}
    own, foreign = walk(doc)
    assert sorted(own[2]) == ["k::Twice", "k::shown::Twice"], own[2]
    assert own[4] == ["k::Once"], own[4]
    assert own[6] == ["k::Globbed"], own[6]
    assert 3 not in own, "a private module has no path"
    assert sorted(foreign["other::Foreign"]) == ["k::Again", "k::Foreign"], foreign
    print("public-paths: self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("crates", nargs="*", default=CRATES)
    parser.add_argument("--check", action="store_true", help="fail when an item has more than one public path")
    parser.add_argument("--list", action="store_true", help="print every public path")
    parser.add_argument("--target-dir", default=os.path.join(ROOT, "target", "public-paths"))
    parser.add_argument("--no-build", action="store_true", help="read the JSON already built")
    parser.add_argument("--self-test", action="store_true", help="check the walk on a small made-up document, then stop")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return 0

    if not args.no_build:
        build_json(args.crates, args.target_dir)

    duplicates = []
    print(f"{'crate':<18} {'paths':>6} {'items':>6} {'foreign':>8}")
    for crate in args.crates:
        name = crate.replace("-", "_")
        with open(os.path.join(args.target_dir, "doc", name + ".json"), encoding="utf-8") as f:
            doc = json.load(f)
        own, foreign = walk(doc)
        n_paths = sum(len(p) for p in own.values())
        print(f"{crate:<18} {n_paths:>6} {len(own):>6} {sum(len(p) for p in foreign.values()):>8}")
        for item_id, item_paths in own.items():
            if len(item_paths) > 1:
                duplicates.append((crate, item_paths))
        for key, item_paths in foreign.items():
            if len(item_paths) > 1:
                duplicates.append((crate, item_paths))
        if args.list:
            for item_paths in sorted(own.values()):
                for path in item_paths:
                    print(f"  {path}")
            for key, item_paths in sorted(foreign.items()):
                for path in item_paths:
                    print(f"  {path} (re-export of {key})")

    for crate, item_paths in duplicates:
        print(f"{crate}: one item at {len(item_paths)} public paths: {', '.join(sorted(item_paths))}")
    if args.check and duplicates:
        print(f"public-paths: {len(duplicates)} item(s) with more than one public path; keep one (docs/LAYOUT.md)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
