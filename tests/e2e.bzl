"""End-to-end tests that start real paratune-server and paratune-worker processes.

paratune_e2e_test(name = "e2e_x_test", srcs = ["e2e_x_test.cc"], deps = [...]) is a cc_test
whose main() gets the server's and the worker's paths as its first two arguments
(tests/test_cluster.h), then extra_args; both binaries are in its runfiles.
"""

load("@rules_cc//cc:defs.bzl", "cc_test")

_SERVER = "//server:paratune-server"
_WORKER = "//worker:paratune-worker"

def paratune_e2e_test(name, srcs, deps = [], extra_args = [], extra_data = [], size = "medium", tags = []):
    """Declares an end-to-end cc_test that runs paratune-server and paratune-worker.

    Args:
      name: the test's name.
      srcs: its sources; they define main().
      deps: its libraries, as for cc_test (test_cluster, gtest, ...).
      extra_args: arguments after the server's and the worker's paths, in order.
      extra_data: runfiles besides the two binaries (those extra_args name included).
      size: the test's size.
      tags: the test's tags (e.g. "exclusive", "slurm").
    """
    cc_test(
        name = name,
        size = size,
        srcs = srcs,
        args = [
            "$(rootpath %s)" % _SERVER,
            "$(rootpath %s)" % _WORKER,
        ] + extra_args,
        data = extra_data + [
            _SERVER,
            _WORKER,
        ],
        tags = tags,
        deps = deps,
    )
