#!/usr/bin/env python3
"""Each library crate's front example, built and run in a fresh crate
outside the workspace, as a new user of the crates would build it.

The front example of a crate is the first code block of the `//!` doc of
its `src/lib.rs` (the one rustdoc tests), read from the file each run, so
that this fails when the doc's example stops compiling outside the
workspace: the fresh crate depends on the library crates by path only
(with the workspace's Cargo.lock copied, so that `--offline` resolves the
same versions), with none of the workspace's features or settings. Hidden
lines (`# `) are kept, as rustdoc keeps them; an example without `fn main`
is wrapped as rustdoc wraps it. Every example is built (`cargo build
--offline --examples`); each not marked `no_run` is then run in its crate's
folder, where rustdoc runs it (the examples that read the repository's
fixtures name them relative to it).

The fresh crate is made in a new temporary folder (removed afterwards);
its build goes to a target folder kept between runs, by default
`target/front-examples` of the workspace (`--target-dir DIR` to choose).

    scripts/front-examples.py [--target-dir DIR] [--keep]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from library_crates import CRATES  # noqa: E402 (beside this script)

# Code block info strings rustdoc compiles as Rust.
RUST_BLOCKS = {"", "rust", "no_run", "should_panic", "edition2018", "edition2021", "edition2024"}


def front_example(crate):
    """The first Rust code block of `crate`'s `//!` doc: (code, no_run)."""
    path = os.path.join(ROOT, crate, "src", "lib.rs")
    doc = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("//!"):
                text = stripped[3:]
                doc.append(text[1:] if text.startswith(" ") else text)
            elif stripped.startswith("#![") or stripped == "":
                continue
            else:
                break
    block, info = None, None
    for line in doc:
        fence = re.match(r"^\s*```(.*)$", line)
        if fence and block is None:
            info = {w.strip() for w in fence.group(1).split(",")} if fence.group(1).strip() else {""}
            if not info <= RUST_BLOCKS:
                info = None
                block = []
                continue
            block = []
        elif fence:
            if info is not None:
                return unhide(block), "no_run" in info
            block, info = None, None
        elif block is not None:
            block.append(line)
    sys.exit(f"front-examples: {path}: no Rust code block in the crate's `//!` doc")


def unhide(lines):
    """Rustdoc's hidden lines shown (`# x` is `x`, `#` alone an empty line,
    `##` a literal `#`), and the code wrapped in `fn main` where it has none."""
    out = []
    for line in lines:
        s = line.lstrip()
        indent = line[: len(line) - len(s)]
        if s == "#":
            out.append("")
        elif s.startswith("##"):
            out.append(indent + s[1:])
        elif s.startswith("# "):
            out.append(indent + s[2:])
        else:
            out.append(line)
    code = "\n".join(out)
    if re.search(r"^\s*(pub\s+)?fn\s+main\s*\(", code, re.M):
        return code + "\n"
    # Rustdoc's wrapping: an example ending in `Ok::<(), E>(())` uses `?`.
    if code.rstrip().endswith("(())"):
        body = "\n".join("    " + l if l else l for l in out)
        return f"fn main() {{\n    fn front() -> Result<(), impl std::fmt::Debug> {{\n{body}\n    }}\n    front().unwrap()\n}}\n"
    body = "\n".join("    " + l if l else l for l in out)
    return f"fn main() {{\n{body}\n}}\n"


def manifest(names):
    deps = "\n".join(f'{c} = {{ path = "{os.path.join(ROOT, c)}" }}' for c in CRATES)
    examples = "\n".join(f'[[example]]\nname = "{n}"\npath = "examples/{n}.rs"\n' for n in names)
    return f"""[package]
name = "tbrw-fronts"
version = "0.0.0"
edition = "2021"
publish = false

# Not a member of any workspace above the temporary folder.
[workspace]

[dependencies]
{deps}
# The examples' hidden set-up lines make temporary folders, as the crates' doc tests do.
tempfile = "3"

# Examples only: no debug info, so the kept target folder stays small.
[profile.dev]
debug = false

{examples}"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-dir", default=os.path.join(ROOT, "target", "front-examples"))
    ap.add_argument("--keep", action="store_true", help="keep the fresh crate's folder and print it")
    args = ap.parse_args()

    fresh = tempfile.mkdtemp(prefix="tbrw-fronts-")
    if os.path.realpath(fresh).startswith(os.path.realpath(ROOT) + os.sep):
        sys.exit(f"front-examples: {fresh} is inside the workspace: set TMPDIR elsewhere")
    try:
        names, no_run = [], set()
        os.mkdir(os.path.join(fresh, "examples"))
        for crate in CRATES:
            code, skip_run = front_example(crate)
            name = crate.replace("-", "_")
            names.append(name)
            if skip_run:
                no_run.add(name)
            with open(os.path.join(fresh, "examples", name + ".rs"), "w", encoding="utf-8") as f:
                f.write(f"//! The front example of `{crate}` (its `src/lib.rs` doc), as a user's crate builds it.\n")
                f.write("#![allow(unused)]\n\n" + code)
        with open(os.path.join(fresh, "Cargo.toml"), "w", encoding="utf-8") as f:
            f.write(manifest(names))
        os.makedirs(os.path.join(fresh, "src"))
        with open(os.path.join(fresh, "src", "lib.rs"), "w", encoding="utf-8") as f:
            f.write("//! The library crates' front examples, in `examples/`.\n")
        shutil.copy(os.path.join(ROOT, "Cargo.lock"), os.path.join(fresh, "Cargo.lock"))

        start = time.monotonic()
        build = ["cargo", "build", "--offline", "--examples", "--target-dir", args.target_dir]
        r = subprocess.run(build, cwd=fresh)
        if r.returncode != 0:
            args.keep = True  # kept for a look at what failed
            sys.exit(f"front-examples: the front examples do not build outside the workspace (crate in {fresh})")
        built = time.monotonic() - start
        failed = []
        for crate, name in zip(CRATES, names):
            if name in no_run:
                print(f"front-examples: {crate}: built (no_run)")
                continue
            exe = os.path.join(args.target_dir, "debug", "examples", name)
            r = subprocess.run([exe], cwd=os.path.join(ROOT, crate), stdout=subprocess.DEVNULL)
            print(f"front-examples: {crate}: built and ran: {'ok' if r.returncode == 0 else 'FAILED'}")
            if r.returncode != 0:
                failed.append(crate)
        print(f"front-examples: {len(CRATES)} crates, built in {built:.1f} s, ran in {time.monotonic() - start - built:.1f} s")
        if failed:
            sys.exit(f"front-examples: failed: {', '.join(failed)}")
    finally:
        if args.keep:
            print(f"front-examples: the fresh crate: {fresh}")
        else:
            shutil.rmtree(fresh, ignore_errors=True)


if __name__ == "__main__":
    main()
