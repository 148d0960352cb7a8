"""How kindling_module_library names headers: the pure path logic of defs.bzl.

Kept apart from the rule so tests/codegen:include_paths_test can call it with
made-up packages and prefixes. Each function returns a struct with `path` and
`error` (None when the inputs are consistent); the rule turns an error into a
fail() that names the target.
"""

HEADER_EXTENSIONS = [".h", ".hh", ".hpp", ".hxx"]

def include_path(short_path):
    """How `#include "..."` names a file from its short_path, before any prefix.

    A file of an external repository has the short_path ../<repo>/<path>; its
    include path is <path>, as for a file of the main repository.
    """
    if short_path.startswith("../"):
        return short_path.split("/", 2)[2]
    return short_path

def _result(path = None, error = None):
    return struct(path = path, error = error)

def spelled_include(package, path, strip_include_prefix = "", include_prefix = ""):
    """How a library's users include the header at `path` (an include path).

    Follows cc_library: an absolute strip_include_prefix ("/runtime") is
    relative to the repository root, a relative one to the package; with only
    include_prefix, the package is stripped.

    Args:
      package: the library's package ("" for the repository root).
      path: the header's include_path().
      strip_include_prefix: as given to the library.
      include_prefix: as given to the library.

    Returns:
      struct(path, error).
    """
    if strip_include_prefix:
        strip = strip_include_prefix
        if strip.startswith("/"):
            strip = strip[1:]
        elif package:
            strip = package + "/" + strip
        strip = strip.rstrip("/")
        if strip:
            if not path.startswith(strip + "/"):
                return _result(error = (
                    "header '%s' is not under strip_include_prefix '%s' " +
                    "(directory '%s'), so it cannot be included the way the " +
                    "cc_library exposes it; move the header under '%s' or " +
                    "change strip_include_prefix to a directory that holds " +
                    "every header in hdrs"
                ) % (path, strip_include_prefix, strip, strip))
            path = path[len(strip) + 1:]
    elif include_prefix and package:
        # cc_library strips the package when only include_prefix is given.
        if not path.startswith(package + "/"):
            return _result(error = "header '%s' is not in package '%s'" % (path, package))
        path = path[len(package) + 1:]
    if include_prefix:
        if include_prefix.startswith("/"):
            return _result(error = (
                "include_prefix '%s' is absolute; cc_library takes a " +
                "relative one, e.g. '%s'"
            ) % (include_prefix, include_prefix.lstrip("/")))
        path = include_prefix.rstrip("/") + "/" + path
    return _result(path = path)

def generated_include(path):
    """The generated header of `path` as included: x/mlp.h -> x/mlp.kindling.h."""
    for extension in HEADER_EXTENSIONS:
        if path.endswith(extension):
            return path[:-len(extension)] + ".kindling.h"
    return path + ".kindling.h"

def generated_name(package, path):
    """The generated file's name relative to the package: foo/x.h -> foo/x.kindling.h.

    Args:
      package: the library's package.
      path: the header's include_path().

    Returns:
      struct(path, error).
    """
    if package:
        if not path.startswith(package + "/"):
            return _result(error = (
                "header '%s' is not in package '%s'; kindling-gen writes " +
                "the generated header next to its source, in the library's " +
                "own package: call kindling_module_library in the BUILD " +
                "file of the package that holds '%s'"
            ) % (path, package, path))
        path = path[len(package) + 1:]
    for extension in HEADER_EXTENSIONS:
        if path.endswith(extension):
            return _result(path = path[:-len(extension)] + ".kindling.h")
    return _result(error = "'%s' is not a header (%s)" % (path, ", ".join(HEADER_EXTENSIONS)))
