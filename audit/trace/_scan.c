/* The compiled pass of `audit trace`: one scan of a batch of trace events (the text between two event
 * boundaries of the events array) that validates it as JSON, proves that no object in it names a key twice,
 * and extracts the fields the analysis reads into columns, without building a Python object per event.
 *
 * It reads only what it is sure of. Anything else (a key or time written with escapes, a number form it does
 * not convert exactly, a repeated key, malformed JSON, nesting over 100, an object of more than 64 keys, a type
 * the pass would have to refuse, an event the text's end cuts) stops the scan before that event (status EVENT)
 * and leaves it out of the columns: the caller reads that event alone by the exact reader, which words every
 * refusal, and scans on after it. Text that is not all ASCII is not scanned (status TEXT). So this module never
 * decides an error, only which reader does the work.
 *
 * Strings it extracts (categories, names, string pids and tids, collective names) are interned: each distinct
 * string gets an id, in the order first met; `string(id)` gives it as a str. (pid, tid) pairs are interned
 * the same way (`thread_key(id)`).
 *
 * Columns, per event, in file order (see audit/trace/scan.py, which names them):
 *   int64: ts, dur (ns), pid, tid, id, correlation, stream, device;
 *   int32: cat, name, collective name (string ids, -1 absent or null), thread key;
 *   int8:  ph code, and a tag for each int64 column.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 100
#define MAX_KEYS 64          /* keys of one object */
#define KEY_STACK 4096       /* keys of the objects open at once */
#define MAX_STRINGS (1 << 22)
#define MAX_ARENA ((Py_ssize_t)1 << 30)
#define MAX_THREADS (1 << 20)
#define MAX_NS ((int64_t)1 << 62)
#define MAX_US 4611686018427387LL /* MAX_NS // 1000 */

/* tags of the int64 columns */
enum { T_NONE = 0, T_INT = 1, T_STR = 2, T_OTHER = 3, T_NULL = 4 };
/* ph codes */
enum { PH_NONE = 0, PH_X = 1, PH_F = 2, PH_LI = 3, PH_UI = 4, PH_OTHER = 5 };

enum { C_TS, C_DUR, C_PID, C_TID, C_ID, C_CORR, C_STREAM, C_DEVICE, N64 };
enum { S_CAT, S_NAME, S_CN, S_TKEY, N32 };
enum { G_PH, G_TS, G_DUR, G_PID, G_TID, G_ID, G_CORR, G_STREAM, G_DEVICE, G_ARGS, N8 };

typedef struct {
    const unsigned char *p;
    Py_ssize_t n;
} Span;

typedef struct {
    const unsigned char *p;
    Py_ssize_t n;
    uint64_t sig; /* the length and first characters: most keys differ there */
} Key;

typedef struct {
    PyObject_HEAD
    /* interned strings: open addressing over ids */
    int32_t *slots;
    uint64_t *slot_hash;
    Py_ssize_t cap;
    Py_ssize_t *off, *len;
    Py_ssize_t nstr, strcap;
    char *arena;
    Py_ssize_t arena_len, arena_cap;
    PyObject *cache; /* list: str or None, by id */
    /* interned thread keys (pid tag, pid, tid tag, tid) */
    int32_t *tslots;
    Py_ssize_t tcap;
    int64_t *tkeys;
    Py_ssize_t nthr, thrcap;
    /* decoded-string scratch */
    unsigned char *scratch;
    Py_ssize_t scratch_cap;
    /* keys of the open objects */
    Key keys[KEY_STACK];
    int nkeys;
    /* columns of the batch being scanned */
    int64_t *c64[N64];
    int32_t *c32[N32];
    int8_t *c8[N8];
    Py_ssize_t rows, rowcap;
} Scanner;

/* ---------- growth helpers ---------- */

static int grow(void **ptr, Py_ssize_t *cap, Py_ssize_t need, size_t item) {
    if (need <= *cap) return 0;
    Py_ssize_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = PyMem_Realloc(*ptr, (size_t)n * item);
    if (!q) return -1;
    *ptr = q;
    *cap = n;
    return 0;
}

static inline uint64_t load8(const unsigned char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* 8 bytes at a time (names run to hundreds of characters); any hash will do: ids are compared by bytes. */
static uint64_t hash_bytes(const unsigned char *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        h ^= load8(p + i);
        h *= 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    uint64_t t = 0;
    for (; i < n; i++) t = (t << 8) | p[i];
    h ^= t;
    h *= 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 29);
}

/* ---------- string interning ---------- */

static int rehash(Scanner *s, Py_ssize_t cap) {
    int32_t *slots = PyMem_Malloc((size_t)cap * sizeof(int32_t));
    uint64_t *hashes = PyMem_Malloc((size_t)cap * sizeof(uint64_t));
    if (!slots || !hashes) {
        PyMem_Free(slots);
        PyMem_Free(hashes);
        return -1;
    }
    for (Py_ssize_t i = 0; i < cap; i++) slots[i] = -1;
    for (Py_ssize_t i = 0; i < s->cap; i++) {
        if (s->slots[i] < 0) continue;
        Py_ssize_t j = (Py_ssize_t)(s->slot_hash[i] & (uint64_t)(cap - 1));
        while (slots[j] >= 0) j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
        hashes[j] = s->slot_hash[i];
    }
    PyMem_Free(s->slots);
    PyMem_Free(s->slot_hash);
    s->slots = slots;
    s->slot_hash = hashes;
    s->cap = cap;
    return 0;
}

/* The id of the string p[:n] (added if new); -1: a limit is reached (odd), -2: out of memory. */
static int32_t intern(Scanner *s, const unsigned char *p, Py_ssize_t n) {
    uint64_t h = hash_bytes(p, n);
    Py_ssize_t mask = s->cap - 1;
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)mask);
    while (s->slots[j] >= 0) {
        int32_t id = s->slots[j];
        if (s->slot_hash[j] == h && s->len[id] == n && memcmp(s->arena + s->off[id], p, (size_t)n) == 0)
            return id;
        j = (j + 1) & mask;
    }
    if (s->nstr >= MAX_STRINGS || s->arena_len + n > MAX_ARENA) return -1;
    if (grow((void **)&s->arena, &s->arena_cap, s->arena_len + n + 1, 1) < 0) return -2;
    Py_ssize_t cap = s->strcap;
    if (grow((void **)&s->off, &cap, s->nstr + 1, sizeof(Py_ssize_t)) < 0) return -2;
    cap = s->strcap;
    if (grow((void **)&s->len, &cap, s->nstr + 1, sizeof(Py_ssize_t)) < 0) return -2;
    s->strcap = cap;
    int32_t id = (int32_t)s->nstr++;
    memcpy(s->arena + s->arena_len, p, (size_t)n);
    s->off[id] = s->arena_len;
    s->len[id] = n;
    s->arena_len += n;
    s->slots[j] = id;
    s->slot_hash[j] = h;
    if (s->nstr * 2 > s->cap && rehash(s, s->cap * 2) < 0) return -2;
    return id;
}

static int thread_rehash(Scanner *s, Py_ssize_t cap) {
    int32_t *slots = PyMem_Malloc((size_t)cap * sizeof(int32_t));
    if (!slots) return -1;
    for (Py_ssize_t i = 0; i < cap; i++) slots[i] = -1;
    for (Py_ssize_t k = 0; k < s->nthr; k++) {
        int64_t *t = s->tkeys + 4 * k;
        uint64_t h = hash_bytes((const unsigned char *)t, 32);
        Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(cap - 1));
        while (slots[j] >= 0) j = (j + 1) & (cap - 1);
        slots[j] = (int32_t)k;
    }
    PyMem_Free(s->tslots);
    s->tslots = slots;
    s->tcap = cap;
    return 0;
}

static int32_t intern_thread(Scanner *s, int64_t ptag, int64_t pid, int64_t ttag, int64_t tid) {
    int64_t key[4] = {ptag, pid, ttag, tid};
    uint64_t h = hash_bytes((const unsigned char *)key, 32);
    Py_ssize_t mask = s->tcap - 1;
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)mask);
    while (s->tslots[j] >= 0) {
        int32_t k = s->tslots[j];
        if (memcmp(s->tkeys + 4 * k, key, 32) == 0) return k;
        j = (j + 1) & mask;
    }
    if (s->nthr >= MAX_THREADS) return -1;
    if (grow((void **)&s->tkeys, &s->thrcap, 4 * (s->nthr + 1), sizeof(int64_t)) < 0) return -2;
    int32_t k = (int32_t)s->nthr++;
    memcpy(s->tkeys + 4 * k, key, 32);
    s->tslots[j] = k;
    if (s->nthr * 2 > s->tcap && thread_rehash(s, s->tcap * 2) < 0) return -2;
    return k;
}

/* ---------- the JSON scanner ---------- */

typedef struct {
    Scanner *s;
    const unsigned char *end;
    int nomem;
} Ctx;

static inline const unsigned char *ws(const unsigned char *p, const unsigned char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string at p (its opening quote): its raw content in *out, *esc set if it holds an escape. */
static const unsigned char *scan_string(const unsigned char *p, const unsigned char *e, Span *out, int *esc) {
    const unsigned char *start = ++p;
    int has = 0;
    for (;;) {
        /* eight characters at a time: stop at the first quote, backslash or control character */
        while (e - p >= 8) {
            uint64_t x = load8(p);
            uint64_t q = x ^ 0x2222222222222222ULL, b = x ^ 0x5C5C5C5C5C5C5C5CULL;
            uint64_t hit = ((q - 0x0101010101010101ULL) & ~q) | ((b - 0x0101010101010101ULL) & ~b) |
                           (x - 0x2020202020202020ULL);
            hit &= 0x8080808080808080ULL & ~x; /* ASCII text: the high bit is never set */
            if (hit) {
                p += __builtin_ctzll(hit) >> 3;
                break;
            }
            p += 8;
        }
        while (p < e && *p != '"' && *p != '\\' && *p >= 0x20) p++;
        if (p >= e || *p < 0x20) return NULL;
        if (*p == '"') break;
        has = 1;
        if (++p >= e) return NULL;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u':
            if (e - p < 5) return NULL;
            for (int i = 1; i <= 4; i++)
                if (hexval(p[i]) < 0) return NULL;
            p += 5;
            break;
        default:
            return NULL;
        }
    }
    out->p = start;
    out->n = p - start;
    *esc = has;
    return p + 1;
}

static int put_utf8(unsigned char *o, uint32_t c) {
    if (c < 0x80) { o[0] = (unsigned char)c; return 1; }
    if (c < 0x800) { o[0] = (unsigned char)(0xC0 | (c >> 6)); o[1] = (unsigned char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

static uint32_t hex4(const unsigned char *p) {
    return (uint32_t)(hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]));
}

/* The escaped string content (already validated by scan_string) decoded into UTF-8 in the scratch buffer;
 * -1: a lone surrogate (the pass would hold a str no UTF-8 can carry: odd), -2: out of memory. */
static int unescape(Scanner *s, Span in, Span *out) {
    if (grow((void **)&s->scratch, &s->scratch_cap, in.n + 4, 1) < 0) return -2;
    unsigned char *o = s->scratch;
    const unsigned char *p = in.p, *e = in.p + in.n;
    while (p < e) {
        if (*p != '\\') { *o++ = *p++; continue; }
        p++;
        switch (*p++) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        default: { /* 'u' */
            uint32_t c = hex4(p);
            p += 4;
            if (c >= 0xDC00 && c <= 0xDFFF) return -1;
            if (c >= 0xD800 && c <= 0xDBFF) {
                if (e - p < 6 || p[0] != '\\' || p[1] != 'u') return -1;
                uint32_t lo = hex4(p + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) return -1;
                p += 6;
                c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
            }
            o += put_utf8(o, c);
        }
        }
    }
    out->p = s->scratch;
    out->n = o - s->scratch;
    return 0;
}

/* A JSON number at p: its parts (integer digits, fraction digits) and whether it has an exponent. */
typedef struct {
    int neg, exp;
    Span ip, fp;
} Num;

static const unsigned char *scan_number(const unsigned char *p, const unsigned char *e, Num *n) {
    n->neg = n->exp = 0;
    n->fp.p = NULL;
    n->fp.n = 0;
    if (p < e && *p == '-') { n->neg = 1; p++; }
    n->ip.p = p;
    if (p >= e) return NULL;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (p < e && *p >= '0' && *p <= '9') p++;
    else return NULL;
    n->ip.n = p - n->ip.p;
    if (p < e && *p == '.') {
        n->fp.p = ++p;
        while (p < e && *p >= '0' && *p <= '9') p++;
        n->fp.n = p - n->fp.p;
        if (!n->fp.n) return NULL;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        n->exp = 1;
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        const unsigned char *d = p;
        while (p < e && *p >= '0' && *p <= '9') p++;
        if (p == d) return NULL;
    }
    /* an integer of more than 640 digits: Python's json refuses one over sys.get_int_max_str_digits() (4300 by
     * default, 640 the least it may be set to), so the exact reader must say */
    if (!n->fp.p && !n->exp && n->ip.n > 640) return NULL;
    /* the number must end here: the scanners around it check what follows */
    return p;
}

/* Integer and fraction digits (at most 3 of those) as ns, as audit.trace.reader.to_ns gives them.
 * 1: *ns set; 0: no time (out of range); -1: a form this pass does not convert (odd). */
static int to_ns(int neg, Span ip, Span fp, int64_t *ns) {
    if (fp.n > 3) return -1;
    while (ip.n > 1 && ip.p[0] == '0') { ip.p++; ip.n--; } /* leading zeros (strings only) */
    if (ip.n > 16) return 0;
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < ip.n; i++) v = v * 10 + (uint64_t)(ip.p[i] - '0');
    if (v > (uint64_t)MAX_US) return 0;
    uint64_t f = 0;
    for (Py_ssize_t i = 0; i < 3; i++) f = f * 10 + (i < fp.n ? (uint64_t)(fp.p[i] - '0') : 0);
    uint64_t t = v * 1000 + f;
    if (t >= (uint64_t)MAX_NS) return 0;
    *ns = neg ? -(int64_t)t : (int64_t)t;
    return 1;
}

static const unsigned char *skip_value(Ctx *c, const unsigned char *p, int depth);

static const unsigned char *literal(const unsigned char *p, const unsigned char *e, const char *word, int n) {
    if (e - p < n || memcmp(p, word, (size_t)n) != 0) return NULL;
    return p + n;
}

/* One key of an object: validated, refused if escaped (compared as written) or repeated among `base`'s. */
static const unsigned char *object_key(Ctx *c, const unsigned char *p, int base, Span *key) {
    Scanner *s = c->s;
    int esc;
    if (p >= c->end || *p != '"') return NULL;
    p = scan_string(p, c->end, key, &esc);
    if (!p || esc) return NULL;
    if (s->nkeys - base >= MAX_KEYS || s->nkeys >= KEY_STACK) return NULL;
    uint64_t sig = (uint64_t)key->n << 56;
    for (Py_ssize_t i = 0; i < key->n && i < 7; i++) sig |= (uint64_t)key->p[i] << (8 * i);
    for (int i = base; i < s->nkeys; i++)
        if (s->keys[i].sig == sig && s->keys[i].n == key->n && (key->n <= 7 || memcmp(s->keys[i].p, key->p, (size_t)key->n) == 0))
            return NULL;
    Key *k = &s->keys[s->nkeys++];
    k->p = key->p;
    k->n = key->n;
    k->sig = sig;
    p = ws(p, c->end);
    if (p >= c->end || *p != ':') return NULL;
    return ws(p + 1, c->end);
}

/* After a member's value: ',' (1, p past it), '}' (0, p past it) or anything else (NULL). */
static const unsigned char *member_end(Ctx *c, const unsigned char *p, int *more) {
    p = ws(p, c->end);
    if (p >= c->end) return NULL;
    if (*p == ',') { *more = 1; return ws(p + 1, c->end); }
    if (*p == '}') { *more = 0; return p + 1; }
    return NULL;
}

static const unsigned char *skip_object(Ctx *c, const unsigned char *p, int depth) {
    Scanner *s = c->s;
    int base = s->nkeys, more = 1;
    Span key;
    p = ws(p + 1, c->end);
    if (p < c->end && *p == '}') return p + 1;
    while (more) {
        if (!(p = object_key(c, p, base, &key))) return NULL;
        if (!(p = skip_value(c, p, depth + 1))) return NULL;
        if (!(p = member_end(c, p, &more))) return NULL;
    }
    s->nkeys = base;
    return p;
}

static const unsigned char *skip_array(Ctx *c, const unsigned char *p, int depth) {
    p = ws(p + 1, c->end);
    if (p < c->end && *p == ']') return p + 1;
    for (;;) {
        if (!(p = skip_value(c, p, depth + 1))) return NULL;
        p = ws(p, c->end);
        if (p >= c->end) return NULL;
        if (*p == ']') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, c->end);
    }
}

static const unsigned char *skip_value(Ctx *c, const unsigned char *p, int depth) {
    const unsigned char *e = c->end;
    Span sp;
    int esc;
    Num n;
    if (depth > MAX_DEPTH || p >= e) return NULL;
    switch (*p) {
    case '"': return scan_string(p, e, &sp, &esc);
    case '{': return skip_object(c, p, depth);
    case '[': return skip_array(c, p, depth);
    case 't': return literal(p, e, "true", 4);
    case 'f': return literal(p, e, "false", 5);
    case 'n': return literal(p, e, "null", 4);
    default: return scan_number(p, e, &n);
    }
}

/* A string field (ph, cat, name, a collective name): its id in *id, -1 for null; other types: odd, unless
 * `others` (then -1 too). */
static const unsigned char *string_field(Ctx *c, const unsigned char *p, int depth, int others, int32_t *id) {
    Span sp, dec;
    int esc;
    *id = -1;
    if (p >= c->end) return NULL;
    if (*p == '"') {
        if (!(p = scan_string(p, c->end, &sp, &esc))) return NULL;
        if (esc) {
            int r = unescape(c->s, sp, &dec);
            if (r == -2) c->nomem = 1;
            if (r < 0) return NULL;
            sp = dec;
        }
        int32_t got = intern(c->s, sp.p, sp.n);
        if (got == -2) c->nomem = 1;
        if (got < 0) return NULL;
        *id = got;
        return p;
    }
    if (*p == 'n') return literal(p, c->end, "null", 4);
    return others ? skip_value(c, p, depth) : NULL;
}

/* ts or dur: ns in *v with tag T_INT; T_NONE where to_ns gives None (absent, null, a boolean, an object, an
 * array, out of range); odd for a form this pass does not convert. */
static const unsigned char *time_field(Ctx *c, const unsigned char *p, int depth, int64_t *v, int8_t *tag) {
    const unsigned char *e = c->end;
    Num n;
    *tag = T_NONE;
    if (p >= e) return NULL;
    if (*p == '"') {
        Span sp;
        int esc;
        if (!(p = scan_string(p, e, &sp, &esc))) return NULL;
        if (esc) return NULL;
        if (sp.n > 40) return p; /* to_ns reads no text that long as a time */
        /* the text of a number (Kineto writes some times as strings): -?digits(.digits)? only */
        const unsigned char *q = sp.p, *qe = sp.p + sp.n, *end;
        int neg = 0;
        if (q < qe && *q == '-') { neg = 1; q++; }
        Span ip = {q, 0}, fp = {NULL, 0};
        while (q < qe && *q >= '0' && *q <= '9') q++;
        ip.n = q - ip.p;
        if (q < qe && *q == '.') {
            fp.p = ++q;
            while (q < qe && *q >= '0' && *q <= '9') q++;
            fp.n = q - fp.p;
            if (!fp.n) return NULL;
        }
        end = q;
        if (end != qe || !ip.n) return NULL;
        int r = to_ns(neg, ip, fp, v);
        if (r < 0) return NULL;
        *tag = r ? T_INT : T_NONE;
        return p;
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        if (!(p = scan_number(p, e, &n)) || n.exp) return NULL;
        int r = to_ns(n.neg, n.ip, n.fp, v);
        if (r < 0) return NULL;
        *tag = r ? T_INT : T_NONE;
        return p;
    }
    return skip_value(c, p, depth);
}

/* An integer field. T_INT: *v (a magnitude of MAX_NS or more is given as MAX_NS, or -1 if negative: every
 * test of the pass reads those as it reads the integer); T_STR: a string's id (when `strings`); T_NULL; T_OTHER for
 * any other value. `thread`: pid or tid, where a float, a boolean, an object, an array or a long integer is
 * odd (which thread it names is the exact reader's to say). */
static const unsigned char *int_field(Ctx *c, const unsigned char *p, int depth, int thread, int64_t *v,
                                      int8_t *tag) {
    const unsigned char *e = c->end;
    Num n;
    *v = 0;
    if (p >= e) return NULL;
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        if (!(p = scan_number(p, e, &n))) return NULL;
        if (n.exp || n.fp.n) {
            if (thread) return NULL;
            *tag = T_OTHER;
            return p;
        }
        if (thread && n.ip.n > 18) return NULL;
        uint64_t x = (uint64_t)MAX_NS; /* over 19 digits */
        if (n.ip.n <= 19) { /* below 10**19 < 2**64 */
            x = 0;
            for (Py_ssize_t i = 0; i < n.ip.n; i++) x = x * 10 + (uint64_t)(n.ip.p[i] - '0');
        }
        if (x >= (uint64_t)MAX_NS) *v = n.neg ? -1 : MAX_NS;
        else *v = n.neg ? -(int64_t)x : (int64_t)x;
        *tag = T_INT;
        return p;
    }
    if (*p == 'n') {
        *tag = thread ? T_NONE : T_NULL;
        return literal(p, e, "null", 4);
    }
    if (*p == '"' && thread) {
        int32_t id;
        if (!(p = string_field(c, p, depth, 0, &id))) return NULL;
        *v = id;
        *tag = T_STR;
        return p;
    }
    if (thread) return NULL;
    *tag = T_OTHER;
    return skip_value(c, p, depth);
}

static inline int key_is(Span k, const char *word, Py_ssize_t n) {
    return k.n == n && memcmp(k.p, word, (size_t)n) == 0;
}

static const unsigned char *args_object(Ctx *c, const unsigned char *p, Py_ssize_t row) {
    Scanner *s = c->s;
    int base = s->nkeys, more = 1;
    Span key;
    p = ws(p + 1, c->end);
    if (p < c->end && *p == '}') return p + 1;
    while (more) {
        if (!(p = object_key(c, p, base, &key))) return NULL;
        if (key_is(key, "correlation", 11))
            p = int_field(c, p, 3, 0, &s->c64[C_CORR][row], &s->c8[G_CORR][row]);
        else if (key_is(key, "stream", 6))
            p = int_field(c, p, 3, 0, &s->c64[C_STREAM][row], &s->c8[G_STREAM][row]);
        else if (key_is(key, "device", 6))
            p = int_field(c, p, 3, 0, &s->c64[C_DEVICE][row], &s->c8[G_DEVICE][row]);
        else if (key_is(key, "Collective name", 15))
            p = string_field(c, p, 3, 1, &s->c32[S_CN][row]);
        else
            p = skip_value(c, p, 3);
        if (!p || !(p = member_end(c, p, &more))) return NULL;
    }
    s->nkeys = base;
    return p;
}

static int8_t ph_code(Scanner *s, int32_t id) {
    if (id < 0) return PH_NONE;
    if (s->len[id] != 1) return PH_OTHER;
    switch (s->arena[s->off[id]]) {
    case 'X': return PH_X;
    case 'f': return PH_F;
    case 'i': return PH_LI;
    case 'I': return PH_UI;
    default: return PH_OTHER;
    }
}

/* One event object at p (its '{'), into row `row` of the columns. */
static const unsigned char *event(Ctx *c, const unsigned char *p, Py_ssize_t row) {
    Scanner *s = c->s;
    int base = s->nkeys, more = 1;
    int32_t ph = -1;
    Span key;
    for (int k = 0; k < N64; k++) s->c64[k][row] = 0;
    for (int k = 0; k < N8; k++) s->c8[k][row] = T_NONE;
    for (int k = 0; k < N32; k++) s->c32[k][row] = -1;
    p = ws(p + 1, c->end);
    if (p < c->end && *p == '}') {
        p++;
        more = 0;
    }
    while (more) {
        if (!(p = object_key(c, p, base, &key))) return NULL;
        switch (key.n) {
        case 2:
            if (key_is(key, "ph", 2)) p = string_field(c, p, 2, 0, &ph);
            else if (key_is(key, "ts", 2)) p = time_field(c, p, 2, &s->c64[C_TS][row], &s->c8[G_TS][row]);
            else if (key_is(key, "id", 2)) p = int_field(c, p, 2, 0, &s->c64[C_ID][row], &s->c8[G_ID][row]);
            else p = skip_value(c, p, 2);
            break;
        case 3:
            if (key_is(key, "cat", 3)) p = string_field(c, p, 2, 0, &s->c32[S_CAT][row]);
            else if (key_is(key, "dur", 3)) p = time_field(c, p, 2, &s->c64[C_DUR][row], &s->c8[G_DUR][row]);
            else if (key_is(key, "pid", 3)) p = int_field(c, p, 2, 1, &s->c64[C_PID][row], &s->c8[G_PID][row]);
            else if (key_is(key, "tid", 3)) p = int_field(c, p, 2, 1, &s->c64[C_TID][row], &s->c8[G_TID][row]);
            else p = skip_value(c, p, 2);
            break;
        case 4:
            if (key_is(key, "name", 4)) p = string_field(c, p, 2, 0, &s->c32[S_NAME][row]);
            else if (key_is(key, "args", 4)) {
                if (p < c->end && *p == '{') {
                    s->c8[G_ARGS][row] = T_INT;
                    p = args_object(c, p, row);
                } else if (p < c->end && *p == 'n') {
                    p = literal(p, c->end, "null", 4);
                } else {
                    return NULL; /* args that are no object: the pass refuses them where it reads them */
                }
            } else p = skip_value(c, p, 2);
            break;
        default:
            p = skip_value(c, p, 2);
        }
        if (!p || !(p = member_end(c, p, &more))) return NULL;
    }
    s->nkeys = base;
    s->c8[G_PH][row] = ph_code(s, ph);
    int32_t t = intern_thread(s, s->c8[G_PID][row], s->c64[C_PID][row], s->c8[G_TID][row], s->c64[C_TID][row]);
    if (t == -2) c->nomem = 1;
    if (t < 0) return NULL;
    s->c32[S_TKEY][row] = t;
    return p;
}

static int ensure_rows(Scanner *s, Py_ssize_t need) {
    if (need <= s->rowcap) return 0;
    Py_ssize_t n = s->rowcap ? s->rowcap : 1024;
    while (n < need) n *= 2;
    for (int k = 0; k < N64; k++) {
        void *q = PyMem_Realloc(s->c64[k], (size_t)n * sizeof(int64_t));
        if (!q) return -1;
        s->c64[k] = q;
    }
    for (int k = 0; k < N32; k++) {
        void *q = PyMem_Realloc(s->c32[k], (size_t)n * sizeof(int32_t));
        if (!q) return -1;
        s->c32[k] = q;
    }
    for (int k = 0; k < N8; k++) {
        void *q = PyMem_Realloc(s->c8[k], (size_t)n);
        if (!q) return -1;
        s->c8[k] = q;
    }
    s->rowcap = n;
    return 0;
}

/* ---------- the Python type ---------- */

/* Why a scan stopped (`next` says where). */
enum {
    END = 0,    /* at the ']' that closes the events array */
    EVENT = 1,  /* before an event this scan does not read: read it otherwise, then scan on */
    SEP = 2,    /* the text ends after an event: read more, and the separator, then scan on */
    MORE = 3,   /* the text ends after a separator: read more, then scan on */
    LIMIT = 4,  /* MAX_ROWS events were read: scan on */
    BADSEP = 5, /* neither ',' nor ']' after an event: the exact reader words it */
    TEXT = 6,   /* the text is not all ASCII (this scan reads none): decode this part otherwise */
};

#define MAX_ROWS 65536

static PyObject *columns(Scanner *s, Py_ssize_t next, int status) {
    Py_ssize_t n = s->rows;
    PyObject *b64 = PyBytes_FromStringAndSize(NULL, n * 8 * N64);
    PyObject *b32 = PyBytes_FromStringAndSize(NULL, n * 4 * N32);
    PyObject *b8 = PyBytes_FromStringAndSize(NULL, n * N8);
    if (!b64 || !b32 || !b8) {
        Py_XDECREF(b64);
        Py_XDECREF(b32);
        Py_XDECREF(b8);
        return NULL;
    }
    if (!n) /* no rows: the columns may not be allocated yet (memcpy from NULL is undefined, even of 0 bytes) */
        return Py_BuildValue("(nNNNni)", n, b64, b32, b8, next, status);
    for (int k = 0; k < N64; k++) memcpy(PyBytes_AS_STRING(b64) + (size_t)k * n * 8, s->c64[k], (size_t)n * 8);
    for (int k = 0; k < N32; k++) memcpy(PyBytes_AS_STRING(b32) + (size_t)k * n * 4, s->c32[k], (size_t)n * 4);
    for (int k = 0; k < N8; k++) memcpy(PyBytes_AS_STRING(b8) + (size_t)k * n, s->c8[k], (size_t)n);
    return Py_BuildValue("(nNNNni)", n, b64, b32, b8, next, status);
}

/* scan(text, start): the events of the array from `start` (an event's first character, or blank space) until the text
 * ends, the array ends, MAX_ROWS, or an event this scan does not read. Text that is not all ASCII: no rows,
 * status EVENT (read it otherwise). */
static PyObject *Scanner_scan(Scanner *s, PyObject *args) {
    PyObject *text;
    Py_ssize_t start;
    int sep = 0;
    if (!PyArg_ParseTuple(args, "Un:scan", &text, &start)) return NULL;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return NULL;
#endif
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    if (start < 0 || start > len) {
        PyErr_SetString(PyExc_ValueError, "scan: start must satisfy 0 <= start <= len(text)");
        return NULL;
    }
    if (!s->slots || !s->tslots) { /* made without __init__, or its __init__ failed */
        PyErr_SetString(PyExc_ValueError, "scan: the scanner is not initialised");
        return NULL;
    }
    s->rows = 0;
    s->nkeys = 0;
    if (!PyUnicode_IS_ASCII(text)) return columns(s, start, TEXT);
    const unsigned char *base = (const unsigned char *)PyUnicode_DATA(text);
    Ctx c = {s, base + len, 0};
    const unsigned char *p = base + start;
    for (;;) {
        if (sep) {
            p = ws(p, c.end);
            if (p >= c.end) return columns(s, p - base, SEP);
            if (*p == ']') return columns(s, p - base, END);
            if (*p != ',') return columns(s, p - base, BADSEP);
            p++;
        }
        p = ws(p, c.end);
        if (p >= c.end) return columns(s, p - base, MORE);
        if (s->rows >= MAX_ROWS) return columns(s, p - base, LIMIT);
        if (*p != '{') return columns(s, p - base, EVENT); /* no object: the exact reader names it */
        if (ensure_rows(s, s->rows + 1) < 0) return PyErr_NoMemory();
        const unsigned char *q = event(&c, p, s->rows);
        if (c.nomem) return PyErr_NoMemory();
        if (!q) return columns(s, p - base, EVENT);
        s->rows++;
        p = q;
        sep = 1;
    }
}

static PyObject *Scanner_string(Scanner *s, PyObject *arg) {
    Py_ssize_t id = PyLong_AsSsize_t(arg);
    if (id == -1 && PyErr_Occurred()) return NULL;
    if (id < 0 || id >= s->nstr) {
        PyErr_SetString(PyExc_IndexError, "no such string id");
        return NULL;
    }
    while (PyList_GET_SIZE(s->cache) <= id)
        if (PyList_Append(s->cache, Py_None) < 0) return NULL;
    PyObject *got = PyList_GET_ITEM(s->cache, id);
    if (got == Py_None) {
        got = PyUnicode_DecodeUTF8(s->arena + s->off[id], s->len[id], "strict");
        if (!got) return NULL;
        PyList_SET_ITEM(s->cache, id, got); /* steals the new reference; the None it replaces is immortal-safe */
        Py_DECREF(Py_None);
    }
    Py_INCREF(got);
    return got;
}

static PyObject *thread_part(Scanner *s, int64_t tag, int64_t v) {
    if (tag == T_INT) return PyLong_FromLongLong(v);
    if (tag == T_STR) {
        PyObject *id = PyLong_FromLongLong(v);
        if (!id) return NULL;
        PyObject *got = Scanner_string(s, id);
        Py_DECREF(id);
        return got;
    }
    Py_RETURN_NONE;
}

static PyObject *Scanner_thread_key(Scanner *s, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k >= s->nthr) {
        PyErr_SetString(PyExc_IndexError, "no such thread key");
        return NULL;
    }
    int64_t *t = s->tkeys + 4 * k;
    PyObject *pid = thread_part(s, t[0], t[1]);
    if (!pid) return NULL;
    PyObject *tid = thread_part(s, t[2], t[3]);
    if (!tid) {
        Py_DECREF(pid);
        return NULL;
    }
    return Py_BuildValue("(NN)", pid, tid);
}

static PyObject *Scanner_strings(Scanner *s, PyObject *unused) { return PyLong_FromSsize_t(s->nstr); }

static int Scanner_init(Scanner *s, PyObject *args, PyObject *kw) {
    if (!PyArg_ParseTuple(args, ":Scanner")) return -1;
    if (s->cache) return 0;
    s->cache = PyList_New(0);
    s->cap = 1024;
    s->slots = PyMem_Malloc((size_t)s->cap * sizeof(int32_t));
    s->slot_hash = PyMem_Malloc((size_t)s->cap * sizeof(uint64_t));
    s->tcap = 64;
    s->tslots = PyMem_Malloc((size_t)s->tcap * sizeof(int32_t));
    if (!s->cache || !s->slots || !s->slot_hash || !s->tslots) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < s->cap; i++) s->slots[i] = -1;
    for (Py_ssize_t i = 0; i < s->tcap; i++) s->tslots[i] = -1;
    return 0;
}

static void Scanner_dealloc(Scanner *s) {
    PyMem_Free(s->slots);
    PyMem_Free(s->slot_hash);
    PyMem_Free(s->off);
    PyMem_Free(s->len);
    PyMem_Free(s->arena);
    PyMem_Free(s->tslots);
    PyMem_Free(s->tkeys);
    PyMem_Free(s->scratch);
    for (int k = 0; k < N64; k++) PyMem_Free(s->c64[k]);
    for (int k = 0; k < N32; k++) PyMem_Free(s->c32[k]);
    for (int k = 0; k < N8; k++) PyMem_Free(s->c8[k]);
    Py_XDECREF(s->cache);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS,
     "scan(text, start) -> (rows, int64 columns, int32 columns, int8 columns, next, status)"},
    {"string", (PyCFunction)Scanner_string, METH_O, "string(id) -> the interned string"},
    {"thread_key", (PyCFunction)Scanner_thread_key, METH_O, "thread_key(id) -> (pid, tid)"},
    {"strings", (PyCFunction)Scanner_strings, METH_NOARGS, "strings() -> how many strings are interned"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "audit.trace._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The compiled scanner of trace event batches (one per file read: its ids are its own).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT, "_scan", "The compiled pass of audit trace (see audit/trace/scan.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&scan_module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
