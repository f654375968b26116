"""Checks deploy/: every Kubernetes manifest parses as YAML with apiVersion, kind and
metadata.name, and every --flag the manifests and systemd units pass to a paratune binary
is one its --helpfull lists, except the flags of open issues named in PENDING_FLAGS.

Usage: manifests_test.py PARATUNE_SERVER PARATUNE_WORKER FILE...
"""
import re
import subprocess
import sys

import yaml

# Flags the manifests use that an open issue adds, by program, e.g. {"paratune-server":
# {"some_flag"}}. Remove a flag here when it lands; the test then checks it. None is pending.
PENDING_FLAGS = {}


def known_flags(binary):
    helpfull = subprocess.run([binary, "--helpfull"], capture_output=True, text=True).stdout
    return set(re.findall(r"^\s+--([a-z_]+) ", helpfull, re.MULTILINE))


def flag_names(args):
    """--name (or --backend=VALUE, whose value decides availability) of each argument."""
    names = set()
    for arg in args:
        match = re.match(r"--([a-z_]+)(=cuda)?", arg)
        if match:
            names.add(match.group(1) + (match.group(2) or ""))
    return names


def used_flags(path, text):
    """{program: flags} passed by a manifest's containers or a unit's *_ARGS variable."""
    used = {}
    if path.endswith(".yaml"):
        for document in yaml.safe_load_all(text):
            spec = document.get("spec", {}).get("template", {}).get("spec", {})
            for container in spec.get("containers", []):
                used.setdefault(container["name"], set()).update(
                    flag_names(container.get("args", [])))
    else:
        for program, variable in (("paratune-server", "PARATUNE_SERVER_ARGS"),
                                  ("paratune-worker", "PARATUNE_WORKER_ARGS")):
            for line in re.findall(r"^Environment=" + variable + r"=(.*)$", text, re.MULTILINE):
                used.setdefault(program, set()).update(flag_names(line.split()))
    return used


def main():
    server, worker, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    known = {"paratune-server": known_flags(server), "paratune-worker": known_flags(worker)}
    failures = []
    for path in files:
        text = open(path).read()
        if path.endswith(".yaml"):
            for document in yaml.safe_load_all(text):
                for field in ("apiVersion", "kind"):
                    if not document.get(field):
                        failures.append(f"{path}: a document has no {field}")
                if not document.get("metadata", {}).get("name"):
                    failures.append(f"{path}: {document.get('kind')} has no metadata.name")
        for program, flags_used in used_flags(path, text).items():
            if program not in known:
                failures.append(f"{path}: unknown program {program}")
                continue
            for flag in sorted(flags_used):
                if flag in PENDING_FLAGS.get(program, set()):
                    print(f"{path}: {program} --{flag}: pending (another issue adds it)")
                elif flag.split("=")[0] not in known[program]:
                    failures.append(f"{path}: {program} has no flag --{flag}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(files)} files checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
