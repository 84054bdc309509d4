"""The installed Triton as the glue sees it: its versions (setup) and what differs in it
(configure's facts, which the other modules ask)."""

import sys

# What differs in the installed Triton, from src/core/triton_versions.h (configure() sets it
# once, at start-up): the glue asks these, never a version number or an attribute's presence.
_facts = {}


def setup():
    import triton

    parts = triton.__version__.split(".")
    major = int(parts[0])
    minor = int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    return triton.__version__, sys.version.split()[0], sys.executable, major, minor


def configure(facts):
    _facts.update(facts)
