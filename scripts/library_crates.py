"""The workspace's library crates, the one list the scripts that check
their fronts read (front-examples.py, public-paths.py). tbrw-sys is the C
library: its front is C, tested by its own C tests."""

CRATES = [
    "tbrw",
    "tbrw-bind",
    "tbrw-output",
    "tbrw-schema",
    "tbrw-elf-profile",
    "tbrw-import",
    "tbrw-query",
    "tbrw-export",
    "tbrw-symbols",
]
