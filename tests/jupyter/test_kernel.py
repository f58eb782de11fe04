# SPDX-License-Identifier: Apache-2.0
"""The DML kernel as Jupyter tests kernels (Debian's python3-jupyter-kernel-test),
plus what that package does not cover: a session across cells, the text and
HTML of a matrix, errors with position and call stack, completion of
variables and namespaces, interrupt and restart.
Run by run_jupyter_tests.sh with JUPYTER_PATH naming a kernelspec "dml";
prints "ok NAME" / "FAIL NAME" lines, then "N passed, N failed"."""
import base64
import os
import sys
import time
import unittest

import jupyter_kernel_test as jkt

TIMEOUT = float(os.environ.get("KERNEL_TIMEOUT", "60"))
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

PLOT = 'plot(matrix("1 3 2 4 3 5", rows=6, cols=1), title="t")'


class DMLKernelTests(jkt.KernelTests):
    kernel_name = "dml"
    language_name = "dml"
    file_extension = ".dml"

    code_hello_world = 'print("hello, world")'
    # paramserv's warning (more workers than rows) goes to stderr
    code_stderr = (
        'ug = function(list[unknown] model, list[unknown] hyperparams, matrix[double] features,'
        ' matrix[double] labels) return (list[unknown] gradients) { gradients = model }\n'
        'ag = function(list[unknown] model, list[unknown] hyperparams, list[unknown] gradients)'
        ' return (list[unknown] model_result) { model_result = model }\n'
        'M = paramserv(model=list(matrix(0, rows=1, cols=1)), features=matrix(1, rows=2, cols=1),'
        ' labels=matrix(1, rows=2, cols=1), upd="ug", agg="ag", epochs=1, batchsize=1, k=4,'
        ' mode="LOCAL", hyperparams=list(lr=1))'
    )
    completion_samples = [
        {"text": "rowSu", "matches": {"rowSums"}},
        {"text": "x = as.sca", "matches": {"as.scalar"}},
    ]
    complete_code_samples = ["x = 1", "print(1)", "if (TRUE) { y = 2 }", "x = 1\nx", "?rowSums"]
    incomplete_code_samples = ["if (TRUE) {", "f = function(double a) return (double b) {", "x = 1 +"]
    invalid_code_samples = ["x = = 1", "y = 1 )"]
    code_generate_error = 'stop("boom")'
    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "x = 2\nx * 10", "result": "20"},
        {"code": 'toString("a")', "result": "a"},
    ]
    code_display_data = [
        {"code": PLOT, "mime": "image/png"},
        {"code": PLOT, "mime": "image/svg+xml"},
    ]
    code_inspect_sample = "rowSums"

    # ---- beyond the package's checks ----

    def run_cell(self, code, timeout=TIMEOUT):
        self.flush_channels()
        reply, outputs = self.execute_helper(code=code, timeout=timeout)
        return reply, outputs

    def test_dml_session_persists(self):
        self.run_cell("a_1 = 41\nsq = function(double v) return (double r) { r = v * v }")
        reply, out = self.run_cell("sq(a_1 + 1)")
        self.assertEqual(reply["content"]["status"], "ok")
        res = [m for m in out if m["msg_type"] == "execute_result"]
        self.assertEqual(res[0]["content"]["data"]["text/plain"], "1764.0")

    def test_dml_matrix_text_and_html(self):
        reply, out = self.run_cell("M = matrix(seq(1, 150), rows=150, cols=1)\nM")
        res = [m for m in out if m["msg_type"] == "execute_result"][0]["content"]["data"]
        self.assertTrue(res["text/plain"].startswith("[150 x 1 matrix]\n1.000\n"))
        self.assertIn("showing 100 of 150 rows", res["text/plain"])
        self.assertIn("<caption>150 x 1 matrix</caption>", res["text/html"])
        self.assertIn("<td>30.000</td>", res["text/html"])
        self.assertNotIn("<td>31.000</td>", res["text/html"])
        self.assertIn("showing 30 of 150 rows and 1 of 1 columns", res["text/html"])

    def test_dml_error_position_and_stack(self):
        reply, out = self.run_cell(
            'g = function(double v) return (double r) {\n  r = v\n  stop("bad " + v)\n}\nz = g(3)')
        c = reply["content"]
        self.assertEqual(c["status"], "error")
        self.assertEqual(c["ename"], "DMLRuntimeException")
        self.assertEqual(c["evalue"], "In[%d]:3:3: bad 3.0" % c["execution_count"])
        self.assertEqual(c["traceback"][1:3], ['      stop("bad " + v)', "      ^"])
        self.assertTrue(any("g()" in line and ":5:" in line for line in c["traceback"][3:]), c["traceback"])
        errs = [m for m in out if m["msg_type"] == "error"]
        self.assertEqual(errs[0]["content"]["evalue"], c["evalue"])
        # the kernel survives and keeps the session
        reply, out = self.run_cell("print(1)")
        self.assertEqual(reply["content"]["status"], "ok")

    def test_dml_syntax_error(self):
        reply, _ = self.run_cell("x = 1\ny = (2 +\nz = 3")
        c = reply["content"]
        self.assertEqual(c["ename"], "ParseException")
        self.assertRegex(c["evalue"], r"^In\[\d+\]:3:3: syntax error")

    def test_dml_complete_variables_namespaces(self):
        self.run_cell('source("%s/stdlib/nn/layers/affine.dml") as affine\nmy_weights = 1' % ROOT)
        for text, want in (("my_w", "my_weights"), ("affine::for", "affine::forward")):
            self.flush_channels()
            msg_id = self.kc.complete(text, len(text))
            reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
            self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
            self.assertIn(want, reply["content"]["matches"])
            self.assertEqual(reply["content"]["cursor_end"], len(text))

    def test_dml_inspect_variable_and_call(self):
        self.run_cell("v_x = 7")
        for code, pos, want in (("v_x", 1, "v_x:\n7"), ("colSums(", 8, "colSums(X)")):
            self.flush_channels()
            self.kc.inspect(code, pos)
            reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
            self.assertTrue(reply["content"]["found"], code)
            self.assertIn(want, reply["content"]["data"]["text/plain"])

    def test_dml_plot_png_decodes(self):
        reply, out = self.run_cell(PLOT)
        d = [m for m in out if m["msg_type"] == "display_data"][0]["content"]["data"]
        png = base64.b64decode(d["image/png"])
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertIn("<svg", d["image/svg+xml"])

    def test_dml_plot_to_file_is_not_inline(self):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "dml_kernel_plot_%d.png" % os.getpid())
        reply, out = self.run_cell('plot(matrix("1 2", rows=2, cols=1), file="%s")' % path)
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertFalse([m for m in out if m["msg_type"] == "display_data"])
        self.assertTrue(os.path.getsize(path) > 0)
        os.unlink(path)

    def test_dml_zz_interrupt_keeps_session(self):
        self.run_cell("kept = 5")
        self.flush_channels()
        msg_id = self.kc.execute("i = 0\nwhile (TRUE) { i = i + 1 }")
        time.sleep(1.0)
        self.km.interrupt_kernel()
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "Interrupted")
        reply, out = self.run_cell("kept + 1")
        res = [m for m in out if m["msg_type"] == "execute_result"]
        self.assertEqual(res[0]["content"]["data"]["text/plain"], "6")

    def test_dml_bad_messages_dropped(self):
        import zmq
        info = self.km.get_connection_info()
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 5000      # close() waits until they are sent
        sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
        hdr = b'{"msg_id": "x", "msg_type": "execute_request", "session": "s", "username": "u", "version": "5.3"}'
        code = b'{"code": "print(\\"forged\\")"}'
        sock.send_multipart([b"<IDS|MSG>", b"0" * 64, hdr, b"{}", b"{}", code])    # wrong signature
        sock.send_multipart([b"no delimiter", b"{}"])
        sock.send_multipart([b"<IDS|MSG>", b"", b"{not json", b"{}", b"{}", b"{}"])    # unsigned: refused before its JSON
        sock.close()
        reply, out = self.run_cell('print("still here")')
        self.assertEqual(reply["content"]["status"], "ok")
        texts = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
        self.assertEqual(texts, "still here\n")    # nothing "forged" ran

    def test_dml_zz_interrupt_paramserv(self):
        self.run_cell(
            'ug2 = function(list[unknown] model, list[unknown] hyperparams, matrix[double] features,'
            ' matrix[double] labels) return (list[unknown] gradients) { gradients = model }\n'
            'ag2 = function(list[unknown] model, list[unknown] hyperparams, list[unknown] gradients)'
            ' return (list[unknown] model_result) { model_result = model }')
        self.flush_channels()
        msg_id = self.kc.execute(
            'M2 = paramserv(model=list(matrix(0, rows=1, cols=1)), features=matrix(1, rows=64, cols=1),'
            ' labels=matrix(1, rows=64, cols=1), upd="ug2", agg="ag2", epochs=1000000, batchsize=1, k=2,'
            ' mode="LOCAL", hyperparams=list(lr=1), verbose=FALSE)')
        time.sleep(1.5)
        self.km.interrupt_kernel()
        reply = self.get_non_kernel_info_reply(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["ename"], "Interrupted", reply["content"]["traceback"])
        reply, out = self.run_cell("exists(\"M2\")")
        res = [m for m in out if m["msg_type"] == "execute_result"]
        self.assertEqual(res[0]["content"]["data"]["text/plain"], "FALSE")

    def test_dml_zzz_restart(self):
        self.run_cell("before_restart = 1")
        self.km.restart_kernel(now=False)
        self.kc.wait_for_ready(timeout=TIMEOUT)
        reply, out = self.run_cell("exists(\"before_restart\")")
        res = [m for m in out if m["msg_type"] == "execute_result"]
        self.assertEqual(res[0]["content"]["data"]["text/plain"], "FALSE")


class Counting(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        print("ok   " + test._testMethodName, flush=True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        print("FAIL " + test._testMethodName + "\n" + self._exc_info_to_string(err, test), flush=True)

    def addError(self, test, err):
        super().addError(test, err)
        print("FAIL " + test._testMethodName + "\n" + self._exc_info_to_string(err, test), flush=True)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(DMLKernelTests)
    runner = unittest.TextTestRunner(stream=open(os.devnull, "w"), resultclass=Counting)
    r = runner.run(suite)
    bad = len(r.failures) + len(r.errors)
    print("%d passed, %d failed" % (r.testsRun - bad - len(r.skipped), bad))
    sys.exit(1 if bad else 0)
