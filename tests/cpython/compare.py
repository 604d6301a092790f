#!/usr/bin/env python3
# compare.py — per-case comparison of two JUnit XML reports of one CPython test
# suite (regrtest --junit-xml): the plain run against the run under scilan_run.
# A case that passed plainly must pass under the hook, unless known-failures lists it.
import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    """Map case name -> 'pass' | 'skip' | 'fail'."""
    got = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        if "failure" in tags or "error" in tags:
            got[case.get("name")] = "fail"
        elif "skipped" in tags or case.get("status") == "skipped":
            got[case.get("name")] = "skip"
        else:
            got[case.get("name")] = "pass"
    return got


def known(path):
    """Case names (first word of each non-comment line) expected to fail under the hook."""
    names = set()
    try:
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    names.add(line.split()[0])
    except FileNotFoundError:
        pass
    return names


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: compare.py SUITE PLAIN.xml HOOKED.xml KNOWN-FAILURES")
    suite, plain_xml, hooked_xml, known_path = sys.argv[1:]
    plain, hooked, expected = outcomes(plain_xml), outcomes(hooked_xml), known(known_path)
    passed = failed = xfail = 0
    for name, result in sorted(plain.items()):
        if result != "pass":
            continue
        under_hook = hooked.get(name, "missing")
        if under_hook == "pass":
            passed += 1
            if name in expected:
                print(f"{suite}: {name} is listed as a known failure but passes: remove it from the list")
        elif name in expected:
            xfail += 1
            print(f"{suite}: known failure under the hook: {name} ({under_hook})")
        else:
            failed += 1
            print(f"{suite}: REGRESSION under the hook: {name} ({under_hook})")
    print(f"{suite}: {passed} passed, {failed} failed, {xfail} known failures "
          f"(of {sum(r == 'pass' for r in plain.values())} cases passing on kernel TCP)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
