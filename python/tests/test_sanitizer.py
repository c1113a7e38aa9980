"""Sanitizer reports -> crash messages (sanitizer.py), on real reports: tiny
C++ programs with a planted bug, built with g++'s -fsanitize and run with the
options `test --sanitize` uses."""

import os
import shutil
import subprocess
import tempfile
import unittest

from opgen_conformance.sanitizer import crash_message, summarize

OOB = r"""
#include <cstdio>
__attribute__((noinline)) float refk_sum_plus_one(const float* p, int n) {
  float s = 0;
  for (int i = 0; i <= n; ++i) s += p[i];  // reads p[n]: one past the end
  return s;
}
int main() {
  float* a = new float[5]();
  std::printf("%f\n", refk_sum_plus_one(a, 5));
  delete[] a;
}
"""

OVERFLOW = r"""
#include <climits>
#include <cstdio>
#include <cstdlib>
__attribute__((noinline)) int refk_add_int(int a, int b) { return a + b; }
int main(int argc, char**) { std::printf("%d\n", refk_add_int(INT_MAX, argc)); }
"""


@unittest.skipIf(shutil.which("g++") is None, "needs g++")
class RealReports(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="opgen-sanitizer-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def run_planted(self, source, sanitizer, env_name, log_prefix):
        # Compiled as the extension's sources are, from a build directory with
        # a relative path (what ccache's CCACHE_BASEDIR makes of them).
        os.makedirs(os.path.join(self.dir, "csrc"))
        os.makedirs(os.path.join(self.dir, "build"))
        with open(os.path.join(self.dir, "csrc", "planted.cpp"), "w") as f:
            f.write(source)
        exe = os.path.join(self.dir, "planted")
        cmd = ["g++", "-O1", "-g1", "-fno-omit-frame-pointer", f"-fsanitize={sanitizer}", "../csrc/planted.cpp", "-o", exe]
        subprocess.run(cmd, check=True, cwd=os.path.join(self.dir, "build"))
        env = dict(os.environ)
        env[env_name] = f"halt_on_error=1:print_stacktrace=1:detect_leaks=0:log_path={os.path.join(self.dir, log_prefix)}"
        p = subprocess.Popen([exe], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.assertNotEqual(p.wait(), 0)
        return p.pid

    def test_asan_out_of_bounds_read(self):
        pid = self.run_planted(OOB, "address", "ASAN_OPTIONS", "asan")
        msg = crash_message(self.dir, pid)
        self.assertIsNotNone(msg)
        self.assertTrue(msg.startswith("AddressSanitizer: heap-buffer-overflow (READ of size 4)"), msg)
        self.assertRegex(msg, r"#0 refk_sum_plus_one\(.*?\) csrc/planted\.cpp:5;")
        self.assertIn("#1 main", msg)

    def test_ubsan_signed_overflow(self):
        pid = self.run_planted(OVERFLOW, "undefined", "UBSAN_OPTIONS", "ubsan")
        msg = crash_message(self.dir, pid)
        self.assertIsNotNone(msg)
        self.assertIn("UndefinedBehaviorSanitizer: signed integer overflow", msg)
        self.assertIn("at csrc/planted.cpp:5;", msg)
        self.assertRegex(msg, r"#0 refk_add_int")

    def test_no_report(self):
        self.assertIsNone(crash_message(self.dir, 1))
        self.assertIsNone(crash_message(None, 1))
        self.assertIsNone(summarize("Segmentation fault\n"))


if __name__ == "__main__":
    unittest.main()
