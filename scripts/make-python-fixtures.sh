#!/usr/bin/env bash
# Regenerates the Python-made fixtures used by the fast unit tests:
#   crates/hermes-cron/tests/fixtures/python/jobs.json  (cron jobs made by Python Hermes 0.19.0)
#   crates/hermes-llm/tests/fixtures/python/auth.json   (credential pool made by `hermes auth add`)
# Needs the real Python Hermes: HERMES_PYTHON_HERMES (see scripts/python-hermes.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${HERMES_PYTHON_HERMES:-$("$root/scripts/python-hermes.sh")}"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
export HERMES_HOME="$home"
mkdir -p "$home/scripts"
printf '#!/bin/sh\necho "disk ok"\n' > "$home/scripts/disk_check.sh"

"$py/bin/hermes" cron create "every 2h" "Summarise the news" --name news --skill arxiv --workdir /tmp >/dev/null
"$py/bin/hermes" cron create "0 9 * * *" --script disk_check.sh --no-agent --name disk >/dev/null
"$py/bin/hermes" cron pause disk >/dev/null
# Fields the CLI has no flags for, through Python's own cron.jobs module.
"$py/bin/python" - <<'PY'
from cron.jobs import create_job, list_jobs, mark_job_run
news = [j for j in list_jobs(include_disabled=True) if j["name"] == "news"][0]
job = create_job(
    "Digest the news job's output", "every 1d", name="digest",
    provider="openrouter", model="anthropic/claude-sonnet-4", base_url="https://openrouter.ai/api/v1/",
    enabled_toolsets=["web", "file"], context_from=news["id"], skills=["arxiv", "summarize"],
)
mark_job_run(job["id"], False, error="model call failed: 500")
mark_job_run(news["id"], True)
PY
"$py/bin/hermes" auth add openrouter --type api-key --api-key sk-or-test-111122223333 --label work >/dev/null
"$py/bin/hermes" auth add openrouter --type api-key --api-key sk-or-test-444455556666 >/dev/null
"$py/bin/hermes" auth add anthropic --type api-key --api-key sk-ant-test-777788889999 --label personal >/dev/null

cp "$home/cron/jobs.json" "$root/crates/hermes-cron/tests/fixtures/python/jobs.json"
cp "$home/auth.json" "$root/crates/hermes-llm/tests/fixtures/python/auth.json"
echo "fixtures written from $py"
