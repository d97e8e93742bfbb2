#!/usr/bin/env python3
"""rlxc command-line tests (abi.md §1): help, version, --list-ops,
exit statuses (0 ok, 1 input errors, 2 bad command line), --emit=ir to a
file, --dump-ir, --name/--entry checks, and docs/ops.md == --list-ops=md.
Every case runs; the report lists all failures."""
import argparse
import os
import subprocess
import sys
import tempfile

FAILS = []

GOOD = """graph sq {
  input %x: f32[4]
  %y = mul(%x, %x)
  return %y
}

graph model {
  input %x: f32[4]
  param %w: f32[4]
  %s = custom_fn(%x, fwd=@sq)
  %y = add(%s, %w)
  return %y
}
"""


def run(rlxc, args, stdin=None):
    p = subprocess.run([rlxc] + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def expect(name, cond, detail=""):
    if not cond:
        FAILS.append("%s %s" % (name, detail))


def case_status(rlxc, name, args, want, err_has=None):
    rc, out, err = run(rlxc, args)
    expect(name, rc == want, "exit %d, expected %d; stderr: %s"
           % (rc, want, err))
    if err_has:
        expect(name, err_has in err, "stderr lacks %r: %s" % (err_has, err))


def test_info(rlxc):
    rc, out, err = run(rlxc, ["--help"])
    expect("help", rc == 0 and "usage: rlxc" in out and "--emit" in out)
    rc, out, _ = run(rlxc, ["-h"])
    expect("-h", rc == 0 and "usage: rlxc" in out)
    rc, out, _ = run(rlxc, ["--version"])
    expect("version", rc == 0 and out == "rlxc 0.1.0\n", repr(out))
    rc, out, _ = run(rlxc, ["--list-ops"])
    ops = out.split()
    expect("list-ops", rc == 0 and "matmul" in ops and "scan" in ops
           and "input" not in ops and "const" not in ops
           and len(ops) == len(set(ops)) and len(ops) > 80)


def test_bad_command_lines(rlxc, good):
    cases = [
        ("no-input", [], "no input file"),
        ("two-inputs", [good, good], "more than one input"),
        ("unknown-option", ["--frobnicate", good], "unknown option"),
        ("bad-emit", ["--emit=exe", good], "unknown kind"),
        ("empty-emit", ["--emit=", good], "--emit"),
        ("bad-O", ["-O7", good], "unknown option"),
        ("bad-dump", ["--dump-ir=nosuchpass", good], "valid: all"),
        ("bad-grad-missing", ["--grad-missing=maybe", good], "expected"),
        ("name-main", ["--name=main", good], "reserved"),
        ("name-keyword", ["--name=int", good], "keyword"),
        ("name-invalid", ["--name=a-b", good], "C identifier"),
        ("name-digit", ["--name=9a", good], "digit"),
        ("o-missing", [good, "-o"], "-o needs a path"),
        ("wrt-empty", ["--wrt=", good], "--wrt"),
        ("list-ops-fmt", ["--list-ops=xml"], "unknown option"),
    ]
    for name, args, msg in cases:
        case_status(rlxc, "bad-cli." + name, args, 2, msg)


def test_inputs(rlxc, tmp, good):
    case_status(rlxc, "missing-file", [os.path.join(tmp, "nope.rlx")], 1,
                "cannot open")
    case_status(rlxc, "directory", ["--check", tmp], 1, "cannot read")
    case_status(rlxc, "check-ok", ["--check", good], 0)
    case_status(rlxc, "entry-unknown", ["--check", "--entry=zz", good], 1,
                "entry graph 'zz' not found")
    case_status(rlxc, "entry-ok", ["--check", "--entry=sq", good], 0)
    empty = os.path.join(tmp, "empty.rlx")
    open(empty, "w").write("// nothing here\n")
    case_status(rlxc, "no-graph", ["--check", empty], 1, "no graph")
    mainf = os.path.join(tmp, "main.rlx")
    open(mainf, "w").write("graph main {\n  input %x: f32[]\n"
                           "  return %x\n}\n")
    case_status(rlxc, "graph-main", ["--check", mainf], 1,
                "cannot name the entry points")
    case_status(rlxc, "graph-main-renamed",
                ["--check", "--name=model", mainf], 0)
    nul = os.path.join(tmp, "nul.rlx")
    open(nul, "wb").write(b"graph g {\x00\xff }\n")
    rc, _, err = run(rlxc, ["--check", nul])
    expect("nul-bytes", rc == 1 and "error:" in err, "exit %d" % rc)


def test_emit_ir(rlxc, tmp, good):
    rc, out, err = run(rlxc, ["--emit=ir", good])
    expect("emit-ir-stdout", rc == 0 and out.startswith("graph sq {\n")
           and "%y = mul(%x, %x) : f32[4]" in out, out + err)
    dst = os.path.join(tmp, "out.rlx")
    rc, out2, err = run(rlxc, ["--emit=ir", "-o", dst, good])
    expect("emit-ir-file", rc == 0 and out2 == "" and
           os.path.exists(dst) and open(dst).read() == out, err)
    rc, out3, err = run(rlxc, ["--emit=ir", "-"], stdin=GOOD.encode())
    expect("emit-ir-stdin", rc == 0 and out3 == out, err)
    rc, out, err = run(rlxc, ["--check", "--dump-ir", good])
    expect("dump-ir-all", rc == 0 and "// ---- after parse ----" in err
           and "// ---- after verify ----" in err and out == "", err)
    rc, out, err = run(rlxc, ["--check", "--dump-ir=parse", good])
    expect("dump-ir-one", rc == 0 and err.count("// ---- after") == 1
           and "graph model {" in err, err)


def test_ops_md(rlxc, root):
    rc, out, err = run(rlxc, ["--list-ops=md"])
    path = os.path.join(root, "docs", "ops.md")
    have = open(path).read() if os.path.exists(path) else ""
    expect("docs/ops.md", rc == 0 and have == out,
           "docs/ops.md is out of date: regenerate it with "
           "`rlxc --list-ops=md > docs/ops.md`")
    rc, names, _ = run(rlxc, ["--list-ops"])
    for op in names.split():
        expect("ops.md-" + op, "| `%s` |" % op in out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.rlx")
        open(good, "w").write(GOOD)
        test_info(a.rlxc)
        test_bad_command_lines(a.rlxc, good)
        test_inputs(a.rlxc, tmp, good)
        test_emit_ir(a.rlxc, tmp, good)
        test_ops_md(a.rlxc, a.root)
    for f in FAILS:
        print("FAIL " + f)
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
