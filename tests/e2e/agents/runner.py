"""Runs the e2e tests (unittest) and ends with the line `N passed, N failed`.

usage: python3 runner.py [-k PATTERN ...] [module ...]
"""
import argparse
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODULES = ["test_harness", "test_hooks", "test_files", "test_hooks_and_files", "test_app_server", "test_usage", "test_gemini",
           "test_copilot", "test_opencode", "test_droid", "test_window", "test_answering", "test_questions", "test_status_line", "test_talking_back",
           "test_qwen", "test_pi", "test_cline", "test_kilo"]


class Result(unittest.TextTestResult):
    def startTest(self, test):
        self._t = time.monotonic()
        super().startTest(test)

    def _took(self):
        return f" ({time.monotonic() - self._t:.1f}s)"

    def addSuccess(self, test):
        super().addSuccess(test)
        self.stream.write(f"  PASS {test.id()}{self._took()}\n")
        self.stream.flush()

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.stream.write(f"  FAIL {test.id()}{self._took()}\n")
        self.stream.flush()

    def addError(self, test, err):
        super().addError(test, err)
        self.stream.write(f"  ERROR {test.id()}{self._took()}\n")
        self.stream.flush()

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.stream.write(f"  SKIP {test.id()}: {reason}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", action="append", default=[], help="only tests whose id contains this")
    ap.add_argument("modules", nargs="*")
    args = ap.parse_args()
    loader = unittest.TestLoader()
    if args.k:
        loader.testNamePatterns = [f"*{k}*" for k in args.k]
    suite = unittest.TestSuite()
    for m in args.modules or MODULES:
        suite.addTests(loader.loadTestsFromName(m))
    import uuid
    from harness.world import RUN_MARKER, sweep_run
    run_id = os.environ.setdefault(RUN_MARKER, uuid.uuid4().hex[:12])
    t0 = time.monotonic()
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=0, resultclass=Result)
    try:
        res = runner.run(suite)
    finally:
        left = sweep_run(run_id)
        if left:
            print(f"runner: killed {len(left)} leftover process(es) of this run: {left}")
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    passed = res.testsRun - failed - len(res.skipped)
    print(f"total time {time.monotonic() - t0:.0f}s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or res.testsRun == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
