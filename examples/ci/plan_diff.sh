#!/usr/bin/env bash
# The plan diff of a pull request, as the Markdown of one PR comment.
#
#   examples/ci/plan_diff.sh BASE_REV [RECIPE...]
#
# For each recipe (default: every recipes/*.craft that declares a recipe) it compiles
# the recipe at BASE_REV and in the working tree (`craftc diff RECIPE --rev BASE_REV`,
# which reads the recipe, its schema and its solutions with `git show`) and appends the
# `--format markdown` diff to the comment. craftc diff exits 0 when the plans are the
# same and 2 when they differ: both are results, not failures. Exit 1 (a recipe that
# does not compile, a bad revision) is shown in the comment and fails this script.
#
# Writes the comment to $PLAN_DIFF_OUT (default craft-plan-diff.md) and, under GitHub
# Actions, `changed=true|false` to $GITHUB_OUTPUT. Exit 0 unless a diff failed.
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BASE_REV [RECIPE...]" >&2
  exit 1
fi
base=$1
shift
CRAFTC=${CRAFTC:-craftc}
out=${PLAN_DIFF_OUT:-craft-plan-diff.md}
limit=${PLAN_DIFF_MAX_CHARS:-60000}   # GitHub refuses comments over 65536 characters

if [ $# -gt 0 ]; then
  recipes=("$@")
else
  mapfile -t recipes < <(grep -lE '^[[:space:]]*recipe[[:space:]]+[A-Za-z_]' recipes/*.craft 2>/dev/null)
fi

changed=false
failed=0
body=$(mktemp)
errors=$(mktemp)
trap 'rm -f "$body" "$errors"' EXIT
{
  echo "<!-- craft-plan-diff -->"
  echo "## craft plan diff against \`$base\`"
  echo
  if [ ${#recipes[@]} -eq 0 ]; then
    echo "No recipe found under \`recipes/\`."
  fi
  for recipe in "${recipes[@]}"; do
    if ! git cat-file -e "$base:$recipe" 2>/dev/null; then
      echo "### \`$recipe\`: new in this pull request"
      echo
      changed=true
      continue
    fi
    "$CRAFTC" diff "$recipe" --rev "$base" --format markdown >"$body" 2>"$errors"
    status=$?
    case $status in
      0) echo "### \`$recipe\`: no changes"; echo ;;
      2) changed=true; cat "$body"; echo ;;
      *) failed=1
         echo "### \`$recipe\`: the plan diff failed (exit $status)"
         echo
         echo '```text'
         cat "$errors"
         echo '```'
         echo ;;
    esac
  done
} >"$out.tmp"

if [ "$(wc -c <"$out.tmp")" -gt "$limit" ]; then
  head -c "$limit" "$out.tmp" >"$out"
  echo >>"$out"
  # Close a code block or <details> the cut left open, so the note renders as text.
  if [ $(( $(grep -c '^```' "$out") % 2 )) -eq 1 ]; then echo '```' >>"$out"; fi
  if [ "$(grep -c '^<details>' "$out")" -gt "$(grep -c '^</details>' "$out")" ]; then echo '</details>' >>"$out"; fi
  printf '\n**Truncated at %s characters**: run `craftc diff RECIPE --rev %s` locally for the whole diff.\n' \
    "$limit" "$base" >>"$out"
  rm -f "$out.tmp"
else
  mv "$out.tmp" "$out"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "changed=$changed" >>"$GITHUB_OUTPUT"
fi
echo "wrote $out (changed=$changed)"
exit $failed
