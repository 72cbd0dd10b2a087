# shellcheck shell=bash
# apt_uri SUITE [APT_DIR]: the URI of this machine's own apt source for SUITE (a "deb" source,
# enabled), read from APT_DIR (default /etc/apt): sources.list and sources.list.d/*.list in the
# one-line format, then sources.list.d/*.sources in the deb822 format. Prints nothing if none.
# Sourced by docker-up.sh, so the image's rootfs comes from whatever mirror the machine is
# configured with and no host name is written into syncgate.
apt_uri() {
  local suite=$1 dir=${2:-/etc/apt} f found
  found=$(
    for f in "$dir/sources.list" "$dir"/sources.list.d/*.list; do
      [[ -f $f ]] || continue
      # deb [opt=value ...] URI SUITE COMPONENT...
      awk -v s="$suite" '
        $1 == "deb" {
          i = 2
          if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
          if ($(i + 1) == s) print $i
        }' "$f"
    done
    for f in "$dir"/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      # Stanzas of "Key: value" lines (a line starting with a blank continues the value).
      awk -v s="$suite" '
        BEGIN { RS = ""; FS = "\n" }
        {
          delete v; key = ""
          for (i = 1; i <= NF; i++) {
            line = $i
            if (line ~ /^#/) continue
            if (line ~ /^[ \t]/ && key != "") { v[key] = v[key] " " line; continue }
            at = index(line, ":")
            if (at == 0) continue
            key = tolower(substr(line, 1, at - 1))
            v[key] = substr(line, at + 1)
          }
          if (tolower(v["enabled"]) ~ /^[ \t]*no[ \t]*$/) next
          if ((" " v["types"] " ") !~ /[ \t]deb[ \t]/) next
          if ((" " v["suites"] " ") !~ ("[ \t]" s "[ \t]")) next
          split(v["uris"], u, " ")
          if (u[1] != "") print u[1]
        }' "$f"
    done
  )
  [[ -z $found ]] || printf '%s\n' "${found%%$'\n'*}"  # the first; no pipe to head (pipefail)
}
