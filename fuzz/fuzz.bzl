"""Fuzz targets that are libFuzzer binaries under --config=fuzz and corpus replays otherwise.

A target's source defines LLVMFuzzerTestOneInput. paratune_fuzz_target(name = "x_fuzzer")
makes:
  x_fuzzer: a binary. With --config=fuzz (clang, scripts/fuzz.sh) libFuzzer supplies main();
    otherwise replay_main.cc does, running the input once on each file or directory named.
  x_fuzzer_replay_test: a cc_test running it on corpus/x_fuzzer/, the seed corpus and every
    crash found, under any compiler.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_test")

def paratune_fuzz_target(name, deps):
    """Declares the binary and the corpus replay test of fuzz target `name` (`name`.cc).

    Args:
      name: the target's name; its source is name + ".cc", its corpus corpus/<name>/.
      deps: the libraries it fuzzes.
    """
    main = select({
        ":libfuzzer": [],
        "//conditions:default": [":replay_main"],
    })
    cc_binary(
        name = name,
        srcs = [name + ".cc"],
        linkopts = select({
            ":libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps + [":fuzz_input"] + main,
    )

    # The corpus grows with every crash found, so it is the one glob in the tree.
    cc_test(
        name = name + "_replay_test",
        size = "small",
        srcs = [name + ".cc"],
        args = ["fuzz/corpus/" + name],
        data = native.glob(["corpus/" + name + "/**"]),
        deps = deps + [
            ":fuzz_input",
            ":replay_main",
        ],
    )
