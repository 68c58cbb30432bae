# gen_hfucd.awk -- the Unicode data of Hugging Face tokenizers' pipeline
# stages (core/tokenizer/normalize.c, pretok.c), as C tables.
#
# Usage: awk -v CAT_AGE=9.0 -v NORM_AGE=9.0 -f tools/gen_hfucd.awk \
#   DerivedAge.txt PropList.txt DerivedCoreProperties.txt \
#   DerivedNormalizationProps.txt \
#   SpecialCasing.txt UnicodeData.txt tools/hf_ucd_extra.txt > tok_hfucd.h
# (Debian's unicode-data package: /usr/share/unicode/).
#
# Hugging Face's classes come from Rust crates built on older UCDs than
# Debian's: unicode_categories (is_other = Cc Cf Co, Mn, P*) and
# unicode-normalization-alignments (NFD, NFKD, composition, combining
# classes). A code point assigned after that crate's Unicode version has
# no category and no decomposition there, so these tables take each
# crate's data from this UCD limited by DerivedAge to CAT_AGE and NORM_AGE
# (measured against the oracle). White_Space and lowercase follow Rust's
# std (this UCD whole). tools/hf_ucd_extra.txt lists the code points where
# that still differs (categories changed since, Unicode 16 additions).
#
# Output: tv_hf_stage1/2, flags per code point in 256-code-point blocks
# (identical blocks shared): 1 White_Space, 2 Cc/Cf/Co, 4 Mn, 8 P*, 16 a
# canonical decomposition, 32 any decomposition, 64 a lowercase mapping,
# 128 a non-zero combining class, 256 M* (9.0: StripAccents), 512 N*
# (Rust's char::is_numeric: the Digits pre-tokenizer), 1024 the regex
# crate's \w (Alphabetic, M*, Nd, Pc, Join_Control; this UCD whole and
# the 16.0 additions of tools/hf_ucd_extra.txt: added tokens'
# single_word). Then sorted
# tables: full decompositions (NFD and NFKD, into tv_hf_dec_data),
# combining classes, lowercase mappings (simple, and the unconditional
# SpecialCasing ones), primary compositions (for NFC).
# Hangul syllables are algorithmic (normalize.c), not listed.
BEGIN {
    FS = ";"
    split(CAT_AGE, a, "."); cat_age = a[1] * 100 + a[2]
    split(NORM_AGE, a, "."); norm_age = a[1] * 100 + a[2]
}
FILENAME ~ /hf_ucd_extra/ {
    line = $0; sub(/#.*/, "", line)
    if (line !~ /;/) next
    split(line, f, ";"); for (i = 1; i <= 3; i++) gsub(/ /, "", f[i])
    range(f[1])
    for (c = lo; c <= hi; c++) extra[c ";" f[2]] = f[3]
    next
}
FILENAME ~ /DerivedAge/ {
    line = $0; sub(/#.*/, "", line)
    if (line !~ /;/) next
    split(line, f, ";"); v = f[2]; gsub(/ /, "", v)
    split(v, a, "."); ag = a[1] * 100 + a[2]
    range(f[1])
    for (c = lo; c <= hi; c++) age[c] = ag
    next
}
FILENAME ~ /PropList/ {
    line = $0; sub(/#.*/, "", line)
    if (line ~ /; *Join_Control/) {
        split(line, f, ";"); range(f[1])
        for (c = lo; c <= hi; c++) word[c] = 1
    }
    if (line !~ /; *White_Space/) next
    split(line, f, ";"); range(f[1])
    for (c = lo; c <= hi; c++) ws[c] = 1
    next
}
FILENAME ~ /DerivedCoreProperties/ {
    line = $0; sub(/#.*/, "", line)
    if (line !~ /; *Alphabetic *$/) next
    split(line, f, ";"); range(f[1])
    for (c = lo; c <= hi; c++) word[c] = 1
    next
}
FILENAME ~ /DerivedNormalizationProps/ {
    line = $0; sub(/#.*/, "", line)
    if (line !~ /; Full_Composition_Exclusion/) next
    split(line, f, ";"); range(f[1])
    for (c = lo; c <= hi; c++) excl[c] = 1
    next
}
FILENAME ~ /SpecialCasing/ {
    line = $0; sub(/#.*/, "", line)
    n = split(line, f, ";")
    if (n < 5) next
    cond = f[5]; gsub(/ /, "", cond)
    if (cond != "") next
    c = hex(f[1]); l = f[2]; gsub(/^ +| +$/, "", l)
    if (split(l, p, " ") > 1) special_lc[c] = l
    next
}
{
    c = hex($1); gc = $3
    if ($2 ~ /, Last>$/) { for (x = first + 1; x <= c; x++) cat[x] = gc }
    if ($2 ~ /, First>$/) first = c
    cat[c] = gc
    if ($4 + 0 != 0) ccc[c] = $4 + 0
    if ($6 != "") {
        d = $6; compat = 0
        if (d ~ /^</) { compat = 1; sub(/^<[^>]*> */, "", d) }
        dec[c] = d; dcompat[c] = compat
    }
    if ($14 != "") lc[c] = hex($14)
}
END {
    for (c in special_lc) lcs[c] = special_lc[c]
    for (c in lc) if (!(c in lcs)) lcs[c] = sprintf("%X", lc[c])
    for (k in extra) {
        split(k, p, ";")
        if (p[2] == "lower") lcs[p[1] + 0] = extra[k]
    }
    nd = 0; ndata = 0
    for (c = 0; c < 1114112; c++) {
        fl = 0
        if (c in ws) fl += 1
        g = cat[c]; ok = (c in age) && age[c] <= cat_age
        if (ok && (g == "Cc" || g == "Cf" || g == "Co")) fl += 2
        mn = ok && g == "Mn"; pu = ok && g ~ /^P/
        if ((c ";mn") in extra) mn = extra[c ";mn"] + 0
        if ((c ";punct") in extra) pu = extra[c ";punct"] + 0
        if (mn) fl += 4
        if (pu) fl += 8
        nok = (c in age) && age[c] <= norm_age
        if (nok && (c in dec) && !dcompat[c]) fl += 16
        if (nok && (c in dec)) fl += 32
        if (c in lcs) fl += 64
        if (nok && (c in ccc)) fl += 128
        mk = nok && g ~ /^M/
        if ((c ";mark") in extra) mk = extra[c ";mark"] + 0
        if (mk) fl += 256
        if (g ~ /^N/ || ((c ";numeric") in extra)) fl += 512
        if ((c in word) || g ~ /^M/ || g == "Nd" || g == "Pc" || \
            ((c ";word") in extra)) fl += 1024
        flags[c] = fl
    }
    nb = 0
    for (blk = 0; blk < 4352; blk++) {
        key = ""
        for (i = 0; i < 256; i++) key = key sprintf("%d,", flags[blk * 256 + i])
        if (!(key in seen)) { seen[key] = nb; body[nb] = key; nb++ }
        stage1[blk] = seen[key]
    }
    print "/* Generated by tools/gen_hfucd.awk from the UCD; do not edit. */"
    printf "#define TV_HF_CAT_AGE \"%s\"\n#define TV_HF_NORM_AGE \"%s\"\n", CAT_AGE, NORM_AGE
    print "static const uint16_t tv_hf_stage1[4352] = {"
    for (blk = 0; blk < 4352; blk++) printf "%d,%s", stage1[blk], (blk % 16 == 15) ? "\n" : ""
    print "};"
    printf "static const uint16_t tv_hf_stage2[%d] = {\n", nb * 256
    for (bi = 0; bi < nb; bi++) print body[bi]
    print "};"
    # full decompositions: canonical (NFD) and any (NFKD)
    n = 0
    for (c = 0; c < 1114112; c++) {
        if (!(c in dec) || !((c in age) && age[c] <= norm_age)) continue
        s = full(c, 0); k = full(c, 1)
        cps[n] = c; dk[n] = s; dkk[n] = k; n++
    }
    printf "#define TV_HF_NDEC %d\n", n
    print "static const uint32_t tv_hf_dec_cp[] = {"
    for (i = 0; i < n; i++) printf "0x%X,%s", cps[i], (i % 8 == 7) ? "\n" : ""
    print "};"
    # per entry: canonical at, canonical len, compat at, compat len
    print "static const uint16_t tv_hf_dec_at[] = {"
    at = 0; data = ""
    for (i = 0; i < n; i++) {
        m1 = split(dk[i], p1, " "); if (dk[i] == "") m1 = 0
        m2 = split(dkk[i], p2, " ")
        printf "%d,%d,", at, m1
        for (j = 1; j <= m1; j++) { data = data "0x" p1[j] ","; at++ }
        printf "%d,%d,\n", at, m2
        for (j = 1; j <= m2; j++) { data = data "0x" p2[j] ","; at++ }
    }
    print "};"
    print "static const uint32_t tv_hf_dec_data[] = {"
    gsub(/,/, ",\n", data); printf "%s", data
    print "};"
    n = 0
    print "static const uint32_t tv_hf_ccc[] = { /* cp << 8 | class */"
    for (c = 0; c < 1114112; c++)
        if ((c in ccc) && (c in age) && age[c] <= norm_age) { printf "0x%X,%s", c * 256 + ccc[c], (n % 8 == 7) ? "\n" : ""; n++ }
    print "};"
    printf "#define TV_HF_NCCC %d\n", n
    n = 0
    print "static const uint32_t tv_hf_lower[] = { /* cp, then 2 more */"
    for (c = 0; c < 1114112; c++) {
        if (!(c in lcs)) continue
        m = split(lcs[c], p, " ")
        printf "0x%X,0x%s,0x%s,0x%s,\n", c, p[1], (m > 1) ? p[2] : "0", (m > 2) ? p[3] : "0"
        n++
    }
    print "};"
    printf "#define TV_HF_NLOWER %d\n", n
    # primary composites: canonical pairs, not excluded
    n = 0
    for (c = 0; c < 1114112; c++) {
        if (!(c in dec) || dcompat[c] || (c in excl)) continue
        if (!((c in age) && age[c] <= norm_age)) continue
        if (split(dec[c], p, " ") != 2) continue
        key = sprintf("%06X%06X", hex(p[1]), hex(p[2]))
        comp[key] = c; ckeys[n++] = key
    }
    sortkeys(ckeys, n)
    print "static const uint32_t tv_hf_comp[] = { /* a, b, then c */"
    for (i = 0; i < n; i++)
        printf "0x%s,0x%s,0x%X,\n", substr(ckeys[i], 1, 6), substr(ckeys[i], 7, 6), comp[ckeys[i]]
    print "};"
    printf "#define TV_HF_NCOMP %d\n", n
}
function full(c, compat,    d, m, p, i, out, x) {
    if (!(c in dec) || (dcompat[c] && !compat) || !((c in age) && age[c] <= norm_age))
        return sprintf("%X", c)
    m = split(dec[c], p, " "); out = ""
    for (i = 1; i <= m; i++) {
        x = full(hex(p[i]), compat)
        out = out (out == "" ? "" : " ") x
    }
    return out
}
function sortkeys(k, n,    i, j, t) {
    for (i = 1; i < n; i++) {
        t = k[i]
        for (j = i - 1; j >= 0 && k[j] > t; j--) k[j + 1] = k[j]
        k[j + 1] = t
    }
}
function range(s,    b, n) {
    gsub(/ /, "", s)
    n = split(s, b, /\.\./)
    lo = hex(b[1]); hi = (n > 1) ? hex(b[2]) : lo
}
function hex(s,    i, v, ch) {
    v = 0; s = toupper(s)
    for (i = 1; i <= length(s); i++) { ch = index("0123456789ABCDEF", substr(s, i, 1)); v = v * 16 + ch - 1 }
    return v
}
