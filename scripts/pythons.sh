# find_python X.Y: print the path of a working CPython X.Y interpreter that can make venvs
# (PYTHONXY, then pyenv's versions, newest patch release first, then pythonX.Y on PATH),
# or fail saying how to provide one. Sourced by test.sh and .ci/run.
find_python() {
    local version=$1 var="PYTHON${1//./}" candidate root
    local candidates=()
    [ -n "${!var:-}" ] && candidates+=("${!var}")
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    # Newest patch first; free-threaded builds (3.13t) take no abi3 wheel, so not those.
    while IFS= read -r candidate; do
        candidates+=("$candidate")
    done < <(ls -d "$root"/versions/"$version".*/ 2>/dev/null | grep -v 't/$' | sort -rV | sed 's|/$|/bin/python'"$version"'|')
    candidate=$(command -v "python$version" 2>/dev/null) && candidates+=("$candidate")
    for candidate in "${candidates[@]}"; do
        # A pyenv shim exists for every installed version but fails where it is not active;
        # Debian's interpreters lack venv/ensurepip without the pythonX.Y-venv package.
        if [ -x "$candidate" ] && "$candidate" -c 'import sys, venv, ensurepip' >/dev/null 2>&1; then
            echo "$candidate"
            return
        fi
    done
    echo "no CPython $version found (set $var, or install it with pyenv)" >&2
    return 1
}
