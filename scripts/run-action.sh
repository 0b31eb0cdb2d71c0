#!/usr/bin/env bash
# The action's run step: maps the action's inputs (IN_*) to qa-loop's QA_LOOP_* variables —
# only the non-empty ones, so qa-loop's own defaults and the config file apply otherwise — and
# replaces itself with `qa-loop run` (exec: no shell stays behind whose /proc/<pid>/environ still
# holds the inputs — `unset` does not change it — and qa-loop makes itself non-dumpable at
# start). `fail-on-reject: false` (QA_LOOP_FAIL_ON_REJECT) turns exit 1 into success inside
# qa-loop; the check run still reports the verdict.
set -uo pipefail

pass() { # pass IN_NAME QA_LOOP_NAME
  local value="${!1:-}"
  if [ -n "$value" ]; then export "$2=$value"; fi
}
pass IN_CONFIG QA_LOOP_CONFIG
pass IN_PLAN QA_LOOP_PLAN
pass IN_SPEC QA_LOOP_SPEC
pass IN_OUT_DIR QA_LOOP_OUT_DIR
pass IN_MODE QA_LOOP_MODE
pass IN_MAX_ITERATIONS QA_LOOP_MAX_ITERATIONS
pass IN_MAX_CONSECUTIVE_ERRORS QA_LOOP_MAX_CONSECUTIVE_ERRORS
pass IN_RECURRING_THRESHOLD QA_LOOP_RECURRING_THRESHOLD
pass IN_SIMILARITY_THRESHOLD QA_LOOP_SIMILARITY_THRESHOLD
pass IN_MIN_SCORE QA_LOOP_MIN_SCORE
pass IN_FIX_SEVERITY QA_LOOP_FIX_SEVERITY
pass IN_PROVIDER QA_LOOP_PROVIDER
pass IN_MODEL QA_LOOP_MODEL
pass IN_REVIEWER_MODEL QA_LOOP_REVIEWER_MODEL
pass IN_FIXER_MODEL QA_LOOP_FIXER_MODEL
pass IN_BASE_URL QA_LOOP_BASE_URL
pass IN_REGION QA_LOOP_REGION
pass IN_API_KEY QA_LOOP_API_KEY
pass IN_MAX_COST_USD QA_LOOP_MAX_COST_USD
pass IN_MAX_TOKENS QA_LOOP_MAX_TOKENS
pass IN_TIMEOUT QA_LOOP_TIMEOUT
pass IN_BASE QA_LOOP_BASE
pass IN_GITHUB_TOKEN QA_LOOP_GITHUB_TOKEN
pass IN_PUSH_TOKEN QA_LOOP_PUSH_TOKEN
pass IN_CHECK_NAME QA_LOOP_CHECK_NAME
pass IN_COMMENT QA_LOOP_COMMENT
pass IN_ESCALATION_LABEL QA_LOOP_ESCALATION_LABEL
pass IN_ESCALATION_ASSIGNEES QA_LOOP_ESCALATION_ASSIGNEES
pass IN_NEEDS_HUMAN_LABEL QA_LOOP_NEEDS_HUMAN_LABEL
pass IN_ALLOWED_BOTS QA_LOOP_ALLOWED_BOTS
pass IN_ERROR_CONCLUSION QA_LOOP_ERROR_CONCLUSION
pass IN_FIXER_COMMAND QA_LOOP_FIXER_COMMAND
pass IN_SANDBOX QA_LOOP_SANDBOX
pass IN_FAIL_ON_REJECT QA_LOOP_FAIL_ON_REJECT
pass IN_FAILURE_ANALYSIS QA_LOOP_FAILURE_ANALYSIS
pass IN_ALLOW_PULL_REQUEST_TARGET_FIXES QA_LOOP_ALLOW_PULL_REQUEST_TARGET_FIXES
pass IN_BOT_LOGIN QA_LOOP_BOT_LOGIN
pass IN_SARIF_UPLOAD QA_LOOP_SARIF_UPLOAD
# The inputs' own copies are not needed any more (the key and tokens especially).
unset IN_API_KEY IN_GITHUB_TOKEN IN_PUSH_TOKEN

exec "${QA_LOOP_BIN:-qa-loop}" run
