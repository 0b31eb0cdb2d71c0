#!/usr/bin/env python3
"""Reads a plan qa-loop wrote with Auto-Claude's own QA functions.

usage: check-auto-claude-plan.py PLAN_JSON [--expect-session N] [--expect-status S]

Auto-Claude's `qa/criteria.py` and `qa/report.py` (copied verbatim into
tests/fixtures/auto-claude/qa/, see its LICENSE-NOTICE.md) load the plan as Auto-Claude does. The
script checks the QA session and status Auto-Claude would resume from, that its history and
recurring-issue functions accept every entry, and that `qa_stats` is exactly what Auto-Claude's
`record_iteration` computes when the same history is recorded one iteration at a time.
Exit 0 when all hold, 1 naming the first that does not.
"""

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "auto-claude"))

from qa import criteria, report  # noqa: E402  (Auto-Claude's code)


def fail(why: str) -> None:
    print(f"check-auto-claude-plan: {why}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("--expect-session", type=int)
    ap.add_argument("--expect-status")
    args = ap.parse_args()
    written = json.loads(Path(args.plan).read_text(encoding="utf-8"))

    with tempfile.TemporaryDirectory() as tmp:
        spec_dir = Path(tmp)
        shutil.copy(args.plan, spec_dir / "implementation_plan.json")

        session = criteria.get_qa_iteration_count(spec_dir)
        if args.expect_session is not None and session != args.expect_session:
            fail(f"Auto-Claude reads qa_session {session}, expected {args.expect_session}")
        status = (criteria.get_qa_signoff_status(spec_dir) or {}).get("status")
        if args.expect_status is not None and status != args.expect_status:
            fail(f"Auto-Claude reads status {status!r}, expected {args.expect_status!r}")
        if criteria.is_qa_approved(spec_dir) != (status == "approved"):
            fail("is_qa_approved disagrees with the status")

        history = report.get_iteration_history(spec_dir)
        if not isinstance(history, list) or not history:
            fail("no qa_iteration_history")
        for i, entry in enumerate(history):
            for key in ("iteration", "status", "timestamp", "issues"):
                if key not in entry:
                    fail(f"qa_iteration_history[{i}] has no {key!r}")
        # Auto-Claude's recurring-issue functions accept qa-loop's entries.
        report.get_recurring_issue_summary(history)
        report.has_recurring_issues([], history)
        report.has_recurring_issues(history[-1]["issues"], history[:-1])
        with contextlib.redirect_stdout(io.StringIO()):
            criteria.print_qa_status(spec_dir)

        # qa_stats exactly as record_iteration computes it, one iteration at a time.
        replay_dir = spec_dir / "replay"
        replay_dir.mkdir()
        fresh = {k: v for k, v in written.items() if k not in ("qa_iteration_history", "qa_stats")}
        criteria.save_implementation_plan(replay_dir, fresh)
        for entry in history:
            if not report.record_iteration(
                replay_dir,
                entry["iteration"],
                entry["status"],
                entry["issues"],
                entry.get("duration_seconds"),
            ):
                fail("record_iteration could not save")
        expected = criteria.load_implementation_plan(replay_dir)["qa_stats"]
        if written.get("qa_stats") != expected:
            fail(
                "qa_stats differs from Auto-Claude's record_iteration:\n"
                f"  written:  {json.dumps(written.get('qa_stats'), sort_keys=True)}\n"
                f"  expected: {json.dumps(expected, sort_keys=True)}"
            )
    print(f"check-auto-claude-plan: ok (qa_session {session}, status {status}, {len(history)} iterations)")


if __name__ == "__main__":
    main()
