#!/bin/sh
# A two-minute tour of nervamem in a scratch store: store, supersede, recall, time-travel.
set -eu
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export NERVAMEM_DB="$scratch/memory.db"
export NERVAMEM_FORMAT=markdown

# Echo a command as it would be typed (arguments with spaces or quotes quoted), then run it.
say() {
    printf '\n$'
    for arg in "$@"; do
        case $arg in
        '' | *[!A-Za-z0-9_./:=@%+,-]*)
            printf " '%s'" "$(printf '%s' "$arg" | sed "s/'/'\\\\''/g")" ;;
        *) printf ' %s' "$arg" ;;
        esac
    done
    printf '\n'
    "$@"
}

say nervamem init
SID=$(nervamem session start "auth rework")
echo "session: $SID"
OLD=$(nervamem store decision "Chose session cookies for auth" -e AuthService \
      --valid-from 2026-01-01 --rationale "simplest for a monolith")
echo "stored:  $OLD"
NEW=$(nervamem store decision "Chose JWT for auth" -e auth_service --valid-from 2026-06-01 \
      --supersedes "$OLD" --rationale "stateless services" --rejected "session cookies")
echo "stored:  $NEW (supersedes $OLD)"
nervamem store fact "auth_service issues 15-minute access tokens" -e auth-service >/dev/null
say nervamem recall "auth mechanism"
say nervamem recall "auth mechanism" --as-of 2026-03-15
say nervamem timeline auth
say nervamem show "$NEW"
say nervamem list --include-superseded
say nervamem session end --summary "auth moved to JWT"
say nervamem stats
