#!/usr/bin/env bash
# File: tests/e2e/quickstart.sh
# Follows docs/00_quickstart.md literally: writes the kernel listing marked
# <!-- quickstart:file NAME --> to NAME, runs the commands of the block marked
# <!-- quickstart:commands --> (the repository's build/release/kcv replaced by the kcv under
# test, include/ linked to the source tree), and expects every command to exit 0.
#   quickstart.sh KCV SOURCE_DIR WORKDIR
set -u
kcv=$1 src=$2 work=$3
doc="$src/docs/00_quickstart.md"
rm -rf "$work" && mkdir -p "$work/build/release" && cd "$work" || exit 1
ln -s "$src/include" include
ln -s "$kcv" build/release/kcv

# The fenced block after a marker line, without its fences.
block_after() {
  awk -v marker="$1" '
    index($0, marker) == 1 { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$doc"
}

for name in $(grep -oE '<!-- quickstart:file [^ ]+ -->' "$doc" | awk '{print $3}'); do
  block_after "<!-- quickstart:file $name -->" >"$name"
  [[ -s "$name" ]] || { echo "FAILED: empty listing for $name in $doc"; exit 1; }
done
commands=$(block_after "<!-- quickstart:commands -->")
[[ -n "$commands" ]] || { echo "FAILED: no <!-- quickstart:commands --> block in $doc"; exit 1; }
while IFS= read -r cmd; do
  [[ -z "$cmd" || "$cmd" == \#* ]] && continue
  echo "\$ $cmd"
  bash -c "$cmd" || { echo "FAILED (exit $?): $cmd"; exit 1; }
done <<<"$commands"
