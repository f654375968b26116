"""cc_binary that runs on a machine without Debian's packages (the GPU machines).

Abseil, Protobuf and libstdc++ are linked from their static archives; only glibc and what
`dynamic_deps_note` names stay dynamic. How it works: a cc_binary's own linkopts come before
its dependencies' (`-labsl_status` from //third_party/system:absl), so `-l:libabsl_status.a`
here resolves every Abseil symbol first, and `--as-needed` keeps the shared libraries that
are then named but no longer needed out of the binary's DT_NEEDED list. The archives are
Debian's (libabsl-dev, libprotobuf-dev, libstdc++-12-dev); nothing is vendored.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary")
load("//third_party/system:libraries.bzl", "ABSL_LIBRARIES")

def _static_linkopts(archives = []):
    """--as-needed, then `archives`, Protobuf and Abseil, then libstdc++ last: a static
    archive only serves the archives named before it."""
    return ["-Wl,--as-needed"] + archives + ["-l:libprotobuf.a"] + [
        "-l:lib%s.a" % library
        for library in ABSL_LIBRARIES
    ] + [
        "-l:libstdc++.a",
        "-static-libgcc",
    ]

def portable_cc_binary(name, linkopts = [], **kwargs):
    """A cc_binary with Abseil, Protobuf and the C++ runtime linked statically.

    Args:
      name: the binary's name.
      linkopts: further link options (after the static ones).
      **kwargs: the cc_binary's other attributes.
    """
    cc_binary(
        name = name,
        linkopts = _static_linkopts() + linkopts,
        **kwargs
    )

def gpu_cc_test(name, linkopts = [], tags = [], **kwargs):
    """A cc_test that needs an NVIDIA GPU: tagged "gpu" (so `bazel test //...` skips it, see
    .bazelrc) and linked like portable_cc_binary, GoogleTest included, so that its binary
    can be copied to a GPU machine without Debian's packages and run there (docs/probe.md).

    Args:
      name: the test's name.
      linkopts: further link options.
      tags: further tags.
      **kwargs: the cc_test's other attributes.
    """
    native.cc_test(
        name = name,
        linkstatic = True,
        linkopts = _static_linkopts([
            "-l:libgtest_main.a",
            "-l:libgmock.a",
            "-l:libgtest.a",
        ]) + linkopts,
        tags = ["gpu"] + tags,
        **kwargs
    )
