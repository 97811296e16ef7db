# find_python X.Y: print the path of a working CPython X.Y interpreter (PYTHONXY, then
# pyenv's versions, then pythonX.Y on PATH), or fail saying how to provide one. Sourced
# by test.sh.
find_python() {
    local version=$1 var="PYTHON${1//./}" candidate root
    local candidates=()
    [ -n "${!var:-}" ] && candidates+=("${!var}")
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for candidate in "$root"/versions/"$version".*/bin/python"$version"; do
        candidates+=("$candidate")
    done
    candidate=$(command -v "python$version" 2>/dev/null) && candidates+=("$candidate")
    for candidate in "${candidates[@]}"; do
        # A pyenv shim exists for every installed version but fails where it is not active.
        if [ -x "$candidate" ] && "$candidate" -c 'import sys, venv' >/dev/null 2>&1; then
            echo "$candidate"
            return
        fi
    done
    echo "no CPython $version found (set $var, or install it with pyenv)" >&2
    return 1
}
