#!/bin/sh
# mktext.sh OUT -- the benchmarks' ~10 MB mixed-language text (tokbench.sh,
# wpbench.sh), made once: kept when OUT exists. OUT's folder holds the
# pieces.
set -eu
text=$1
out=$(dirname "$text")
[ -s "$text" ] && exit 0
mkdir -p "$out"
# The text: Debian's licenses, man pages and changelogs (English, code,
# markup), and the translations of installed programs (msgunfmt of the
# .mo catalogues: Russian, Japanese, Chinese, Arabic, Hindi, Greek, ...),
# the-verdict.txt, repeated to ~10 MB.
{
    cat /usr/share/common-licenses/* tests/data/the-verdict.txt
    for l in de fr es ru uk ja zh_CN zh_TW ko ar he hi el th vi tr pl; do
        for m in /usr/share/locale/$l/LC_MESSAGES/*.mo; do
            [ -f "$m" ] && msgunfmt "$m" 2>/dev/null | sed -n 's/^msgstr "\(.*\)"$/\1/p'
        done
    done
    for f in /usr/share/man/man1/[a-m]*.1.gz; do zcat "$f"; done
} > "$out/base.txt"
: > "$text"
while [ "$(stat -c %s "$text")" -lt 10000000 ]; do cat "$out/base.txt" >> "$text"; done
head -c 10000000 "$text" | iconv -c -f utf-8 -t utf-8 > "$out/cut" && mv "$out/cut" "$text"
