/* ERB scanner (re2c) and Ruby tokenizer, plus the ERB parser driver. See erb.h for the design.
 *
 * Stage 1 mirrors Ruby 3.1 erb.rb: TrimScanner#explicit_trim_line with the scan regex
 *   /(.*?)(^[ \t]*<%\-|<%\-|-%>\r?\n|-%>|<%%|<%=|<%#|<%|%%>|%>|\z)/m
 * and ERB::Compiler#compile_stag / #compile_etag / #compile_content with its Buffer (items of a
 * generated line joined by "; ", a text's newlines repeated after its put command). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../runtime/error.h"
#include "erb.h"
#include "erb_parse.h"
#include "../runtime/vm.h"
#include "../runtime/bigint.h"

/* ------------------------------------------------------------------ the generated script */

enum { M_PUT = 1, M_INS_OPEN = 2, M_INS_CLOSE = 3 };   /* marker bytes in the script */

/* The script byte -> source offset map, as runs: the bytes of a run from `at` on come from
 * source offset `off` on (adv: one source byte per script byte) or all from `off` (generated
 * text). A tag-heavy template has a run per two or three source bytes (issue 13 §1: twelve
 * bytes a run was five times the source's size), so runs are stored as deltas: varint(at - the
 * previous run's at), then varint(zigzag(off - the offset the previous run would give at `at`)
 * << 1 | adv), with a checkpoint (the run's values and where the next run starts) every
 * TPL_ERB_CK runs for lookups. */
#define TPL_ERB_CK 32
typedef struct erb_ck { uint32_t at, off, pos, adv; } erb_ck;

typedef struct erb_script {
    char *s;            /* the script (heap) */
    uint8_t *mb;        /* the runs, encoded */
    size_t mbn, mbcap;
    erb_ck *ck;         /* run k * TPL_ERB_CK's values, and mb's offset after it */
    size_t nck, ckcap;
    size_t nmap;        /* runs */
    uint32_t last_at, last_off; /* the last run (joins and deltas) */
    bool last_adv;
    /* the last lookup's run (lookups come mostly in script order) */
    size_t cur_run, cur_pos;
    uint32_t cur_at, cur_off;
    bool cur_adv, cur_ok;
    size_t n, cap;
    bool line_has_item; /* Buffer: items on the current line are joined by "; " */
    bool oom;
} erb_script;

static void sc_free(erb_script *sc)
{
    free(sc->s);
    free(sc->mb);
    free(sc->ck);
    sc->s = NULL;
    sc->mb = NULL;
    sc->ck = NULL;
}

static size_t put_varint(uint8_t *b, uint64_t v)
{
    size_t k = 0;
    while (v >= 0x80) { b[k++] = (uint8_t)(v | 0x80); v >>= 7; }
    b[k++] = (uint8_t)v;
    return k;
}

static uint64_t get_varint(const uint8_t *b, size_t *pos)
{
    uint64_t v = 0;
    for (int sh = 0;; sh += 7) {
        uint8_t x = b[(*pos)++];
        v |= (uint64_t)(x & 0x7F) << sh;
        if (!(x & 0x80)) return v;
    }
}

/* Appends the run (at, off, adv). */
static void map_add(erb_script *sc, uint32_t at, uint32_t off, bool adv)
{
    if (sc->mbn + 20 > sc->mbcap) {
        size_t nc = sc->mbcap ? sc->mbcap * 2 : 1024;
        uint8_t *nb = realloc(sc->mb, nc);
        if (!nb) { sc->oom = true; return; }
        sc->mb = nb;
        sc->mbcap = nc;
    }
    uint32_t d = at - sc->last_at;
    uint32_t pred = sc->last_adv ? sc->last_off + d : sc->last_off;
    int64_t delta = (int64_t)off - (int64_t)pred;
    uint64_t zz = delta < 0 ? ((uint64_t)-delta << 1) - 1 : (uint64_t)delta << 1;
    sc->mbn += put_varint(sc->mb + sc->mbn, d);
    sc->mbn += put_varint(sc->mb + sc->mbn, zz << 1 | adv);
    if (sc->nmap % TPL_ERB_CK == 0) {
        if (sc->nck == sc->ckcap) {
            size_t nc = sc->ckcap ? sc->ckcap * 2 : 64;
            erb_ck *nk = realloc(sc->ck, nc * sizeof *nk);
            if (!nk) { sc->oom = true; return; }
            sc->ck = nk;
            sc->ckcap = nc;
        }
        sc->ck[sc->nck++] = (erb_ck){ at, off, (uint32_t)sc->mbn, adv };
    }
    sc->nmap++;
    sc->last_at = at;
    sc->last_off = off;
    sc->last_adv = adv;
}

/* The run after (*at, *off, *adv), decoded from mb at *pos. */
static void map_next(const uint8_t *mb, size_t *pos, uint32_t *at, uint32_t *off, bool *adv)
{
    uint32_t d = (uint32_t)get_varint(mb, pos);
    uint64_t v = get_varint(mb, pos);
    uint32_t pred = *adv ? *off + d : *off;
    uint64_t zz = v >> 1;
    int64_t delta = zz & 1 ? -(int64_t)((zz + 1) >> 1) : (int64_t)(zz >> 1);
    *at += d;
    *off = (uint32_t)((int64_t)pred + delta);
    *adv = v & 1;
}

static void sc_put(erb_script *sc, const char *s, size_t n, uint32_t off, bool advance)
{
    if (sc->oom) return;
    if (sc->n + n + 1 > sc->cap) {
        size_t nc = sc->cap ? sc->cap * 2 : 1024;
        while (nc < sc->n + n + 1) nc *= 2;
        char *ns = realloc(sc->s, nc);
        if (!ns) { sc->oom = true; return; }
        sc->s = ns;
        sc->cap = nc;
    }
    if (n) {
        bool fixed = !advance || n == 1; /* every byte from `off` (one byte: either way) */
        advance = advance || n == 1; /* (one byte: the same either way; lets byte-wise puts join) */
        /* generated text after generated text from the same offset joins it too (a tag's "; "
         * and its marker: a run less per tag) */
        bool joins = sc->nmap && ((sc->last_adv && advance && sc->last_off + (sc->n - sc->last_at) == off) ||
                                  (!sc->last_adv && fixed && sc->last_off == off));
        if (!joins) map_add(sc, (uint32_t)sc->n, off, advance);
    }
    memcpy(sc->s + sc->n, s, n);
    sc->n += n;
    sc->s[sc->n] = 0;
}

/* The map's arrays shrunk to their size, once the script is built. */
static void map_shrink(erb_script *sc)
{
    if (sc->mbn) {
        uint8_t *nb = realloc(sc->mb, sc->mbn);
        if (nb) { sc->mb = nb; sc->mbcap = sc->mbn; }
    }
    if (sc->nck) {
        erb_ck *nk = realloc(sc->ck, sc->nck * sizeof *nk);
        if (nk) { sc->ck = nk; sc->ckcap = sc->nck; }
    }
}

/* The source offset of script byte i (< sc->n). */
static uint32_t sc_src(erb_script *sc, size_t i)
{
    size_t lo = 0, hi = sc->nck, kc = sc->cur_run / TPL_ERB_CK;
    if (sc->cur_ok && sc->cur_at <= i && (kc + 1 >= sc->nck || sc->ck[kc + 1].at > i)) {
        lo = kc + 1; /* the cursor's block holds i's run: no search */
    } else {
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (sc->ck[mid].at <= i) lo = mid + 1;
            else hi = mid;
        }
    }
    if (!lo) return 0;
    size_t k = lo - 1, run, pos;
    uint32_t at, off;
    bool adv;
    if (sc->cur_ok && sc->cur_run / TPL_ERB_CK == k && sc->cur_at <= i) {
        run = sc->cur_run, pos = sc->cur_pos, at = sc->cur_at, off = sc->cur_off, adv = sc->cur_adv;
    } else {
        const erb_ck *c = &sc->ck[k];
        run = k * TPL_ERB_CK, pos = c->pos, at = c->at, off = c->off, adv = c->adv;
    }
    while (run + 1 < sc->nmap) {
        size_t p = pos;
        if (at + (uint32_t)get_varint(sc->mb, &p) > i) break;
        map_next(sc->mb, &pos, &at, &off, &adv);
        run++;
    }
    sc->cur_run = run, sc->cur_pos = pos, sc->cur_at = at, sc->cur_off = off, sc->cur_adv = adv;
    sc->cur_ok = true;
    return adv ? off + (uint32_t)(i - at) : off;
}

/* A growable content buffer: bytes with their source offsets. */
typedef struct erb_content {
    char *s;
    uint32_t *off;
    size_t n, cap;
    bool oom;
} erb_content;

static void ct_add(erb_content *c, const char *s, size_t n, uint32_t off)
{
    if (c->oom) return;
    if (c->n + n + 1 > c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        while (nc < c->n + n + 1) nc *= 2;
        char *ns = realloc(c->s, nc);
        if (!ns) { c->oom = true; return; }
        c->s = ns;
        uint32_t *no = realloc(c->off, nc * sizeof *no);
        if (!no) { c->oom = true; return; }
        c->off = no;
        c->cap = nc;
    }
    for (size_t i = 0; i < n; i++) { c->s[c->n] = s[i]; c->off[c->n++] = off + (uint32_t)i; }
}

static void buf_push_begin(erb_script *sc, uint32_t off)
{
    if (sc->line_has_item) sc_put(sc, "; ", 2, off, false);
    sc->line_has_item = true;
}

static void buf_cr(erb_script *sc, uint32_t off)
{
    sc_put(sc, "\n", 1, off, false);
    sc->line_has_item = false;
}

/* A text between tags: its source span [off, end) (its bytes are the source's with each `<%%`
 * read as `<%`: erb_put_text), none while off == end. */
typedef struct erb_textspan { uint32_t off, end; } erb_textspan;

static void text_add(erb_textspan *t, uint32_t off, uint32_t end)
{
    if (t->off == t->end) t->off = off;
    t->end = end;
}

/* add_put_cmd: the text, then as many line breaks as it holds. The marker holds the text's
 * length in the source: its offset is the marker's own (its run is the text's offset), and its
 * bytes are read from the source (erb_put_text), so nothing is copied (issue 13 §1: a long
 * text took five bytes a byte here). */
static void add_put(erb_script *sc, const char *src, erb_textspan *t)
{
    if (t->off == t->end) return;
    uint32_t off = t->off, end = t->end;
    char mk[24];
    int mn = snprintf(mk, sizeof mk, "%c%u%c", M_PUT, (unsigned)(end - off), M_PUT);
    buf_push_begin(sc, off);
    sc_put(sc, mk, (size_t)mn, off, false);
    for (const char *p = src + off, *e = src + end; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
        sc_put(sc, "\n", 1, (uint32_t)(p - src), false);
    t->off = t->end = 0;
}

static void put_content(erb_script *sc, const erb_content *c, size_t n)
{
    for (size_t i = 0; i < n; i++) sc_put(sc, c->s + i, 1, c->off[i], false);
}

typedef enum { ST_NONE, ST_CODE, ST_INSERT, ST_COMMENT } erb_stag;

/* The tag tokens of the scan regex, by re2c. Returns the token kind and sets *len; 0 = none. */
enum { T_LSTRIP = 1, T_OPEN_DASH, T_CLOSE_DASH_NL, T_CLOSE_DASH, T_OPEN_PCT, T_OPEN_EQ, T_OPEN_HASH,
       T_OPEN, T_CLOSE_PCT, T_CLOSE };

static int tag_at(const char *s, const char *end, bool line_start, size_t *len)
{
    const char *YYCURSOR = s, *YYMARKER = s, *YYLIMIT = end;
    (void)YYLIMIT;
    (void)YYMARKER;
    if (line_start) {
        /*!re2c
            re2c:define:YYCTYPE = "unsigned char";
            re2c:yyfill:enable = 0;
            [ \t]* "<%-" { *len = (size_t)(YYCURSOR - s); return T_LSTRIP; }
            * { goto plain; }
        */
    }
plain:
    YYCURSOR = s;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:yyfill:enable = 0;
        "<%-"          { *len = 3; return T_OPEN_DASH; }
        "-%>" "\r"? "\n" { *len = (size_t)(YYCURSOR - s); return T_CLOSE_DASH_NL; }
        "-%>"          { *len = 3; return T_CLOSE_DASH; }
        "<%%"          { *len = 3; return T_OPEN_PCT; }
        "<%="          { *len = 3; return T_OPEN_EQ; }
        "<%#"          { *len = 3; return T_OPEN_HASH; }
        "<%"           { *len = 2; return T_OPEN; }
        "%%>"          { *len = 3; return T_CLOSE_PCT; }
        "%>"           { *len = 2; return T_CLOSE; }
        *              { return 0; }
    */
}

/* compile_content for the tag that just closed. */
static void close_tag(erb_script *sc, erb_stag st, erb_content *c)
{
    if (st == ST_CODE) {
        size_t n = c->n;
        bool nl = n > 0 && c->s[n - 1] == '\n';
        if (nl) n--;
        buf_push_begin(sc, n ? c->off[0] : 0);
        put_content(sc, c, n);
        if (nl) buf_cr(sc, c->off[n]);
    } else if (st == ST_INSERT) {
        uint32_t off = c->n ? c->off[0] : 0;
        buf_push_begin(sc, off);
        char o = M_INS_OPEN, cl = M_INS_CLOSE;
        sc_put(sc, &o, 1, off, false);
        put_content(sc, c, c->n);
        sc_put(sc, &cl, 1, c->n ? c->off[c->n - 1] : off, false);
    }
    c->n = 0;
}

/* Builds the script of src; false with *err_off/msg on an unclosed tag (or out of memory). */
static bool erb_build_script(const char *src, size_t n, erb_script *sc, uint32_t *err_off, char *msg, size_t msgcap)
{
    erb_content c = { 0 };
    erb_textspan text = { 0, 0 };
    erb_stag st = ST_NONE;
    uint32_t tag_off = 0;
    size_t i = 0, resume = 0;
    while (i < n) {
        size_t len = 0;
        /* Ruby's ExplicitScanner matches `^[ \t]*<%-` with a StringScanner, whose `^` also matches where its
         * scan resumes: after a tag's end (-%> with its newline) or a text `<%%` (`<%= x %> <%- y -%>` drops
         * the blank) */
        bool ls = i == 0 || src[i - 1] == '\n' || (i == resume && st == ST_NONE);
        int t = tag_at(src + i, src + n, ls, &len);
        uint32_t off = (uint32_t)i;
        if (t == 0) {
            if (st == ST_NONE) text_add(&text, off, off + 1);
            else ct_add(&c, src + i, 1, off);
            i++;
            continue;
        }
        if (st == ST_NONE) {
            switch (t) {
            case T_LSTRIP: case T_OPEN_DASH: case T_OPEN: case T_OPEN_EQ: case T_OPEN_HASH:
                add_put(sc, src, &text);
                st = t == T_OPEN_EQ ? ST_INSERT : t == T_OPEN_HASH ? ST_COMMENT : ST_CODE;
                tag_off = (uint32_t)(i + len - (t == T_OPEN ? 2 : 3));
                break;
            case T_OPEN_PCT:
                /* (Ruby's compile_stag puts a text token that is exactly "\n" at once: `<% # c %>` then
                 * "\n<%% x %>" hides only the "\n" put, the "<% x %>" put is on the script's next line) */
                if (i == resume + 1 && src[resume] == '\n') add_put(sc, src, &text);
                text_add(&text, off, off + 2);
                resume = i + len;
                break;   /* "<%" */
            default: text_add(&text, off, off + (uint32_t)len); break;   /* -%> %> %%> outside a tag */
            }
        } else {
            switch (t) {
            case T_CLOSE_DASH_NL: close_tag(sc, st, &c); st = ST_NONE; buf_cr(sc, off); resume = i + len; break;
            case T_CLOSE_DASH: case T_CLOSE: close_tag(sc, st, &c); st = ST_NONE; resume = i + len; break;
            case T_CLOSE_PCT: ct_add(&c, "%>", 2, off); break;
            default: ct_add(&c, src + i, len, off); break;   /* <% <%= <%- ... inside a tag */
            }
        }
        i += len;
    }
    if (st != ST_NONE && c.n && !c.oom) {
        /* a tag open at the end: Ruby 3.1's ERB puts what followed the tag as text (its compile's last
         * add_put_cmd), `%%>` in it as `%>` and `<%%` kept; tpl does when that text is the source's own bytes
         * (no `%%>` read as `%>`, no `<%%` that erb_put_text would read as `<%`), else refuses below */
        uint32_t from = c.off[0];
        bool plain = c.n == n - from;
        for (size_t k = 0; plain && k < c.n; k++) plain = c.off[k] == from + k;
        for (size_t k = from; plain && k + 2 < n; k++) plain = !(src[k] == '<' && src[k + 1] == '%' && src[k + 2] == '%');
        if (plain) {
            text.off = from;
            text.end = (uint32_t)n;
            st = ST_NONE;
        }
    } else if (st != ST_NONE && !c.n && !c.oom) {
        st = ST_NONE;   /* nothing after the tag: Ruby puts nothing */
    }
    if (st != ST_NONE) {
        *err_off = tag_off;
        snprintf(msg, msgcap, "unclosed ERB tag (missing %%>)");
        free(c.s);
        free(c.off);
        return false;
    }
    add_put(sc, src, &text);
    bool oom = c.oom || sc->oom;
    free(c.s);
    free(c.off);
    if (oom) { sc->oom = true; *err_off = 0; snprintf(msg, msgcap, "%s", tpl_error_kind_format(TPL_EK_NOMEM)); return false; }
    if (!sc->s) sc_put(sc, "", 0, 0, false);
    map_shrink(sc);
    return !sc->oom;
}

/* ------------------------------------------------------------------ Ruby tokens */

struct erb_feed;
typedef struct rlex {
    tpl_pctx *ctx;
    const char *s;        /* script */
    size_t n;
    tpl_token_vec *out;   /* the tokens (tpl_erb_tokens), or NULL: each goes to feed */
    struct erb_feed *feed;
    int prev;             /* previous token kind (0 at the start) */
    size_t prev_off;      /* offset of the previous token */
    size_t prev_end;      /* end offset of the previous token */
    int stack[256];       /* open brackets (token kinds) */
    int depth;
    bool in_params;       /* between block-parameter bars */
    bool want_params;     /* just after `{` (block) or `do` */
    bool def_name;        /* the previous token is a def's method name */
    int def_at;           /* in a def's parameter list: 1 + the depth of its `(` (then in_params) */
    bool def_body;        /* the previous token closed a def's parameter list: an expression starts (Ruby's EXPR_BEG) */
    int cond_at;          /* in a for/while/until header: 1 + its bracket depth (its `do` is DO_COND) */
    int cmd_at;           /* in a command's arguments (`x.each_slice 2 do`): 1 + its bracket depth (its `do`
                           * is DO_BLOCK, the command's block, as Ruby's keyword_do_block) */
    bool top_script;      /* the template's script (not a #{} body): its last line's comment is checked */
    int last_stmt;        /* the kind of the last token that is no statement separator (0: none yet) */
    tpl_smap locals;      /* names assigned so far (Ruby's lexer knows its local variables) */
    tpl_arena *larena;    /* where `locals` lives (NULL: ctx->arena) */
    size_t amb_slash;     /* `name /x` after a name no local has (Ruby: a regex argument unless a binding's
                           * local): the `/`'s offset + 1, its token flagged 'r' (0: none) */
    uint8_t next_flag;    /* the flag of the next token pushed */
    size_t hd_nl, hd_end; /* a heredoc's line: its newline, and where the script goes on after its
                           * body's terminator line (0: no heredoc pending) */
    size_t masgn_end;     /* the end of the last `a, b, c` run of names scanned for a multiple
                           * assignment (a name before it is one of that run: the answer is known) */
    bool masgn_decl;      /* that run ends in `=`: each of its names is a local */
} rlex;

static void feed_tok(struct erb_feed *f, tpl_token t);

static bool push_tok(rlex *L, int kind, size_t off, size_t len)
{
    L->def_name = false;
    L->def_body = false;
    if (kind == TK_TERM || kind == TK_INS_CLOSE || kind == TK_PUT) L->cmd_at = 0;
    else if (kind == TK_CMD && (!L->cmd_at || L->cmd_at > L->depth + 1)) L->cmd_at = L->depth + 1;
    if (kind != TK_TERM) L->last_stmt = kind;
    uint8_t flag = L->next_flag;
    L->next_flag = 0;
    if (!L->out) {
        feed_tok(L->feed, (tpl_token){ .off = (uint32_t)off, .len = (uint32_t)len, .kind = (uint16_t)kind, .flag = flag });
        L->prev = kind;
        L->prev_off = off;
        L->prev_end = off + len;
        return true;
    }
    if (L->out->n == L->out->cap) {
        size_t nc = L->out->cap ? L->out->cap * 2 : 256;
        tpl_token *nv = realloc(L->out->v, nc * sizeof *nv);
        if (!nv) { tpl_pctx_nomem(L->ctx, (uint32_t)off); return false; }
        L->out->v = nv;
        L->out->cap = nc;
    }
    L->out->v[L->out->n++] = (tpl_token){ .off = (uint32_t)off, .len = (uint32_t)len, .kind = (uint16_t)kind, .flag = flag };
    L->prev = kind;
    L->prev_off = off;
    L->prev_end = off + len;
    return true;
}

static void regex_match_locals(rlex *L, const char *s, size_t n, size_t st, size_t e);
static bool is_local(rlex *L, const char *s, size_t n)
{
    uint32_t v;
    return tpl_smap_get(&L->locals, s, n, &v);
}

static void add_local(rlex *L, const char *s, size_t n)
{
    L->locals.arena = L->larena ? L->larena : L->ctx->arena;
    if (!tpl_smap_put(&L->locals, s, n, 1)) tpl_pctx_nomem(L->ctx, (uint32_t)(s - L->s));
}

/* A token after which an expression has ended (Ruby's EXPR_END states). */
static bool value_end(int k)
{
    switch (k) {
    case TK_IDENT: case TK_CONST: case TK_IVAR: case TK_INTEGER: case TK_FLOAT: case TK_SSTRING:
    case TK_DSTRING: case TK_SYMBOL: case TK_REGEX: case TK_NIL: case TK_TRUE: case TK_FALSE: case TK_END:
    case TK_RPAREN: case TK_RBRACK: case TK_RBRACE: case TK_SELF: case TK_WORDS: case TK_LINE: case TK_ENCODING:
        return true;
    default:
        return false;
    }
}

/* A token after which a line break does not end the statement. */
static bool continues(int k)
{
    switch (k) {
    case 0: case TK_TERM: case TK_PLUS: case TK_MINUS: case TK_UMINUS: case TK_STAR: case TK_SLASH:
    case TK_PERCENT: case TK_POW: case TK_EQ: case TK_NE: case TK_LT: case TK_GT: case TK_LE: case TK_GE:
    case TK_CMP: case TK_MATCH: case TK_NMATCH: case TK_ANDAND: case TK_OROR: case TK_BANG: case TK_ASSIGN:
    case TK_OP_ASGN: case TK_QMARK: case TK_COLON: case TK_COMMA: case TK_DOT: case TK_ANDDOT: case TK_LPAREN: case TK_LPCALL:
    case TK_LBRACK: case TK_LBRACK_IDX: case TK_LBRACE: case TK_ASSOC: case TK_LSHIFT: case TK_EQQ:
    case TK_AND: case TK_OR: case TK_NOT: case TK_INS_OPEN: case TK_LABEL: case TK_SLABEL: case TK_DLABEL: case TK_CMD: case TK_DEFINED: case TK_DEFINED_P:
    case TK_AMP: case TK_PIPE: case TK_CARET: case TK_RSHIFT:
        return true;
    default:
        return false;
    }
}

#define RUBY_KEYWORDS(X) \
    X("if", TK_IF) X("unless", TK_UNLESS) X("elsif", TK_ELSIF) X("else", TK_ELSE) X("end", TK_END) \
    X("then", TK_THEN) X("case", TK_CASE) X("when", TK_WHEN) X("do", TK_DO) X("and", TK_AND) \
    X("or", TK_OR) X("not", TK_NOT) X("nil", TK_NIL) X("true", TK_TRUE) X("false", TK_FALSE) \
    X("next", TK_NEXT) X("break", TK_BREAK) X("self", TK_SELF) X("__LINE__", TK_LINE) \
    X("for", TK_FOR) X("in", TK_IN) X("while", TK_WHILE) X("until", TK_UNTIL) X("__ENCODING__", TK_ENCODING) \
    X("begin", TK_BEGIN) X("rescue", TK_RESCUE) X("ensure", TK_ENSURE) X("defined?", TK_DEFINED) \
    X("def", TK_DEF) X("return", TK_RETURN) X("retry", TK_RETRY)

/* Ruby keywords tpl does not support: a located compile error naming the construct. */
static const char *const unsupported_kw[] = {
    "class", "module",
    "redo", "super", "alias", "undef", "BEGIN", "END", NULL
};

static int keyword(const char *s, size_t n)
{
#define KW(str, tok) if (n == sizeof(str) - 1 && memcmp(s, str, n) == 0) return tok;
    RUBY_KEYWORDS(KW)
#undef KW
    return 0;
}

static bool ident_start(unsigned char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
static bool ident_char(unsigned char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* Does a command argument start at p (after an identifier and blanks)? */
static bool arg_starts(rlex *L, size_t p)
{
    const char *s = L->s;
    unsigned char c = (unsigned char)s[p];
    if (c == '\'' || c == '"' || c == '@' || c == '[' || c == '(' || (c >= '0' && c <= '9')) return true;
    if (c == ':') return ident_start((unsigned char)s[p + 1]) || s[p + 1] == '"';
    if (c == '!') return s[p + 1] != '=' && s[p + 1] != '~' && s[p + 1] != ' ';
    if (c == '-' || c == '+') return s[p + 1] >= '0' && s[p + 1] <= '9';
    /* `name <<~EOS`: a heredoc argument */
    if (c == '<' && s[p + 1] == '<')
        return s[p + 2] == '~' || s[p + 2] == '-' || s[p + 2] == '"' || s[p + 2] == '\'' || (s[p + 2] >= 'A' && s[p + 2] <= 'Z');
    if (ident_start(c)) {
        size_t e = p;
        while (ident_char((unsigned char)s[e])) e++;
        static const char *const stop[] = { "if", "unless", "and", "or", "then", "do", "end", "while", "until",
                                            "rescue", "else", "elsif", "when", "in", "ensure", NULL };
        for (int i = 0; stop[i]; i++)
            if (strlen(stop[i]) == e - p && memcmp(s + p, stop[i], e - p) == 0) return false;
        return true;
    }
    return false;
}

/* Finds the end of a quoted literal starting at s[i] (quote q); handles #{} nesting in "..."
 * (at most 256 strings deep). (size_t)-1: unterminated; TOO_DEEP: nested deeper. */
#define TOO_DEEP ((size_t)-2)
static size_t skip_string_at(const char *s, size_t n, size_t i, char q, int depth)
{
    if (depth > 256) return TOO_DEEP;
    i++;
    while (i < n) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) { i += 2; continue; }
        if (c == q) return i + 1;
        if (q == '"' && c == '#' && i + 1 < n && s[i + 1] == '{') {
            int d = 1;
            i += 2;
            while (i < n && d > 0) {
                if (s[i] == '{') d++;
                else if (s[i] == '}') { if (--d == 0) break; }
                else if (s[i] == '$' && i + 1 < n) { i += 2; continue; }   /* $' and $`: no quote */
                else if (s[i] == '"' || s[i] == '\'') {
                    i = skip_string_at(s, n, i, s[i], depth + 1);
                    if (i == (size_t)-1 || i == TOO_DEEP) return i;
                    continue;
                }
                i++;
            }
            if (i < n) i++;
            continue;
        }
        if (c == M_PUT || c == M_INS_OPEN || c == M_INS_CLOSE) return (size_t)-1;
        i++;
    }
    return (size_t)-1;
}

static size_t skip_string(const char *s, size_t n, size_t i, char q) { return skip_string_at(s, n, i, q, 0); }

/* The end of the interpolation "#{...}" at s[i] (its '#'): skip_string_at's scan of it; (size_t)-1 when it does not end. */
static size_t skip_interp(const char *s, size_t n, size_t i)
{
    int d = 1;
    i += 2;
    while (i < n && d > 0) {
        if (s[i] == '{') d++;
        else if (s[i] == '}') { if (--d == 0) return i + 1; }
        else if (s[i] == '$' && i + 1 < n) { i += 2; continue; }
        else if (s[i] == '"' || s[i] == '\'') {
            i = skip_string_at(s, n, i, s[i], 1);
            if (i == (size_t)-1 || i == TOO_DEEP) return i;
            continue;
        } else if (s[i] == M_PUT || s[i] == M_INS_OPEN || s[i] == M_INS_CLOSE) return (size_t)-1;
        i++;
    }
    return (size_t)-1;
}

/* Whether an interpolating literal whose text starts at s[body] and whose closing delimiter is at
 * s[close] ends in an unescaped "#$" that Ruby reads with the delimiter as a global variable's name
 * ("a#$" interpolates $" and goes on; likewise /a#$/, %Q<a#$>): the literal does not end there. */
static bool gvar_eats_close(const char *s, size_t body, size_t close)
{
    if (close < body + 2 || s[close - 1] != '$' || s[close - 2] != '#' || !strchr("~*$?!@/\\;,.=:<>\"&`'+", s[close]))
        return false;
    size_t k = close - 2, bs = 0;
    while (k > body && s[k - 1] == '\\') { k--; bs++; }
    return bs % 2 == 0;
}

static bool lex_error(rlex *L, size_t off, const char *fmt, const char *what, int wl)
{
    char buf[160];
    snprintf(buf, sizeof buf, fmt, wl, what);
    tpl_pctx_error(L->ctx, (uint32_t)off, "%s", buf);
    return false;
}

/* Tokenizes s[0..n) (a script, or the code of one #{} interpolation). */
static bool ruby_lex(rlex *L)
{
    const char *s = L->s;
    size_t n = L->n, i = 0;
    while (i < n && !L->ctx->failed) {
        unsigned char c = (unsigned char)s[i];
        size_t st = i;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { i++; continue; }
        if (c == '\\' && i + 1 < n && s[i + 1] == '\n') { i += 2; continue; }
        if (c == '#') {
            while (i < n && s[i] != '\n') i++;
            /* a comment on the script's last line also hides the `; _erbout` Ruby's ERB ends its script
             * with: ERB#result is then the last statement's value -- the text when that statement puts
             * text (or there is none: `_erbout = +''`), else another value (`<% x = 2 %><% # c %>` is 2) */
            if (i == n && L->top_script && L->last_stmt == TK_END && L->depth == 0) {
                /* after an `end`: the value of the statement it closes, checked by the compiler (an if whose
                 * every branch ends in text puts the text; compiler/lower_erb.c tpl_erb_last_value) */
                L->ctx->erb_last_comment = (uint32_t)st + 1;
                continue;
            }
            if (i == n && L->top_script && L->last_stmt && L->last_stmt != TK_PUT && L->last_stmt != TK_INS_CLOSE)
                return lex_error(L, st, "unsupported Ruby construct: a comment%.*s on the last line hides ERB's `; _erbout' (its "
                                 "result is then the last statement's value)", "", 0);
            continue;
        }
        if (c == ';' && L->in_params && !L->def_at) {
            /* |a; b, c|: block-local variables, new (nil) in each run of the block, as the block's own
             * `b = nil; c = nil` first (tokens at their names). One naming a local assigned before it
             * (Ruby's block-local shadows it, tpl's block would assign it) is a located refusal, one naming
             * a key of the state a refusal when the block runs (compiler/lower_erb.c blocal_nil). */
            size_t p = i + 1, names[16], lens[16];
            int nn = 0;
            for (;;) {
                while (p < n && (s[p] == ' ' || s[p] == '\t')) p++;
                size_t q = p;
                if (q < n && ident_start((unsigned char)s[q]) && !(s[q] >= 'A' && s[q] <= 'Z')) {
                    while (q < n && ident_char((unsigned char)s[q])) q++;
                }
                if (q == p || nn == 16) return lex_error(L, p < n ? p : st, "syntax error, unexpected '%.*s' in block-local variables", s + (p < n ? p : st), 1);
                if (keyword(s + p, q - p)) return lex_error(L, p, "syntax error, unexpected '%.*s' in block-local variables", s + p, (int)(q - p));
                if (is_local(L, s + p, q - p))   /* (any name assigned before, in any scope: refused even where Ruby's would not clash) */
                    return lex_error(L, p, "unsupported Ruby construct: a block-local variable `%.*s' named as a local variable before it", s + p, (int)(q - p));
                names[nn] = p;
                lens[nn++] = q - p;
                p = q;
                while (p < n && (s[p] == ' ' || s[p] == '\t')) p++;
                if (p < n && s[p] == ',') { p++; continue; }
                if (p < n && s[p] == '|') break;
                return lex_error(L, p < n ? p : st, "syntax error, unexpected '%.*s' in block-local variables", s + (p < n ? p : st), 1);
            }
            push_tok(L, TK_BAR, p, 1);
            L->in_params = false;
            for (int k = 0; k < nn; k++) {
                add_local(L, s + names[k], lens[k]);
                push_tok(L, TK_IDENT, names[k], lens[k]);
                push_tok(L, TK_ASSIGN, names[k], 1);
                L->next_flag = 'b';   /* (nil, refused when the name is a key of the state: grammar/erb_parse.y) */
                push_tok(L, TK_NIL, names[k], lens[k]);
                push_tok(L, TK_TERM, names[k], 1);
            }
            i = p + 1;
            continue;
        }
        if (c == '\n' || c == ';') {
            i++;
            if (c == '\n' && L->hd_end && st == L->hd_nl) { /* the heredoc's body and terminator: read already */
                i = L->hd_end;
                L->hd_end = 0;
            }
            if (c == '\n') {
                int top = L->depth ? L->stack[L->depth - 1] : 0;
                if (continues(L->prev) || top == TK_LPCALL || top == TK_LBRACK || top == TK_LBRACK_IDX ||
                    top == TK_LBRACE)
                    continue;
                /* a leading-dot method chain continues the statement */
                size_t p = i;
                while (p < n && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) p++;
                if (p + 1 < n && s[p] == '.' && s[p + 1] != '.') continue;
            }
            if (L->cond_at == L->depth + 1) L->cond_at = 0;
            if (L->prev != TK_TERM && L->prev != 0) push_tok(L, TK_TERM, st, 1);
            else if (L->prev == 0) { /* leading separators are dropped */ }
            continue;
        }
        if (c == M_PUT) {
            size_t e = i + 1;
            while (e < n && s[e] != M_PUT) e++;
            push_tok(L, TK_PUT, st, e + 1 - st);
            i = e + 1;
            continue;
        }
        if (c == M_INS_OPEN) {
            if (L->depth >= 256) return lex_error(L, st, "%.*snesting too deep", "", 0);
            L->stack[L->depth++] = TK_INS_OPEN;
            push_tok(L, TK_INS_OPEN, st, 1);
            i++;
            continue;
        }
        if (c == M_INS_CLOSE) {
            if (!L->depth || L->stack[L->depth - 1] != TK_INS_OPEN)
                return lex_error(L, st, "syntax error: unexpected end of <%%= tag%.*s", "", 0);
            L->depth--;
            push_tok(L, TK_INS_CLOSE, st, 1);
            i++;
            continue;
        }
        bool was_value = value_end(L->prev) && !L->def_body;
        bool spaced = st > 0 && L->prev_end < st;
        /* ::Const (a top-level constant, as Chef's ::File): the constant itself, the template having no other namespace */
        if (c == ':' && !was_value && i + 2 < n && s[i + 1] == ':' && s[i + 2] >= 'A' && s[i + 2] <= 'Z') {
            i += 2;
            continue;
        }
        if (c == '@') {
            size_t e = i + 1;
            if (e < n && s[e] == '@') return lex_error(L, st, "class variables (%.*s) are not supported", "@@", 2);
            if (!(e < n && ident_start((unsigned char)s[e]))) return lex_error(L, st, "unexpected '%.*s'", "@", 1);
            while (e < n && ident_char((unsigned char)s[e])) e++;
            push_tok(L, TK_IVAR, st, e - st);
            i = e;
            continue;
        }
        /* &:name block argument (Symbol#to_proc) */
        if (c == '&' && i + 2 < n && s[i + 1] == ':' && ident_start((unsigned char)s[i + 2]) &&
            (L->prev == TK_LPCALL || L->prev == TK_COMMA || L->prev == TK_CMD)) {
            size_t e = i + 2;
            while (e < n && ident_char((unsigned char)s[e])) e++;
            if (e < n && (s[e] == '?' || s[e] == '!')) e++;
            push_tok(L, TK_BLOCKARG, st, e - st);
            i = e;
            continue;
        }
        /* &blk, &method(:name), &->(x) { }: a block argument (a Proc passed as the call's block) */
        if (c == '&' && i + 1 < n && (ident_start((unsigned char)s[i + 1]) || s[i + 1] == '-' || s[i + 1] == ')') &&
            (L->prev == TK_LPCALL || L->prev == TK_COMMA || L->prev == TK_CMD ||
             ((L->prev == TK_BAR || L->prev == TK_LPAREN) && ident_start((unsigned char)s[i + 1])))) {
            /* (|&b| and ->(&b): a block's &block parameter) */
            /* (`def f(&)` and `g(&)`: the anonymous block parameter and its forwarding, Ruby 3.1's) */
            push_tok(L, TK_BLOCKAMP, st, 1);
            i++;
            continue;
        }
        /* the last match's globals: $~ (MatchData), $& (its text), $` and $' (the text before and after it),
         * $1..$9 (its groups), and $! (the exception a rescue clause runs for), as one IVAR token each
         * (variables the lowering reads) */
        if (c == '$' && i + 1 < n && (s[i + 1] == '~' || s[i + 1] == '&' || s[i + 1] == '!' || s[i + 1] == '`' || s[i + 1] == '\'' ||
                                      (s[i + 1] >= '1' && s[i + 1] <= '9'))) {
            size_t e = i + 2;
            if (s[i + 1] >= '1' && s[i + 1] <= '9')
                while (e < n && s[e] >= '0' && s[e] <= '9' && e - i < 6) e++;
            push_tok(L, TK_IVAR, st, e - st);
            i = e;
            continue;
        }
        /* $name (a global the template never assigns, as old Puppet templates read `$var`): nil, as Ruby's
         * uninitialized global; an assignment, $stdout and the like, and `defined?($x)` stay refused */
        if (c == '$' && i + 1 < n && s[i + 1] >= 'a' && s[i + 1] <= 'z') {
            size_t e = i + 1;
            while (e < n && ident_char((unsigned char)s[e])) e++;
            size_t p = e, b = st;
            while (p < n && (s[p] == ' ' || s[p] == '\t')) p++;
            while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '(')) b--;
            bool asg = p + 1 < n && ((s[p] == '=' && s[p + 1] != '=' && s[p + 1] != '~' && s[p + 1] != '>') ||
                                     (strchr("+-*/%|&^<>", s[p]) && (s[p + 1] == '=' || (p + 2 < n && s[p + 1] == s[p] && s[p + 2] == '='))));
            bool special = (e - st == 7 && (memcmp(s + st, "$stdout", 7) == 0 || memcmp(s + st, "$stderr", 7) == 0)) ||
                           (e - st == 6 && memcmp(s + st, "$stdin", 6) == 0);
            bool def = b >= 8 && memcmp(s + b - 8, "defined?", 8) == 0;
            if (!asg && !special && !def) {
                push_tok(L, TK_NIL, st, e - st);
                i = e;
                continue;
            }
        }
        if (c == '$') return lex_error(L, st, "global variables (%.*s) are not supported", s + st, 1);
        if (ident_start(c)) {
            size_t e = i;
            while (e < n && ident_char((unsigned char)s[e])) e++;
            if (e < n && (s[e] == '?' || s[e] == '!') && !(e + 1 < n && s[e + 1] == '=' && !(e + 2 < n && s[e + 2] == '=')))
                e++;
            /* label `key:` (not `::`) */
            if (e < n && s[e] == ':' && !(e + 1 < n && s[e + 1] == ':') && s[e - 1] != '?' && L->prev != TK_DOT && L->prev != TK_ANDDOT &&
                L->prev != TK_QMARK) {
                int top = L->depth ? L->stack[L->depth - 1] : 0;
                /* (also the first argument of p.(k: 1) and the first parameter of ->(k:)) */
                size_t j = st;
                while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '\t')) j--;
                bool dotparen = L->prev == TK_LPAREN && j >= 2 && s[j - 1] == '(' && (s[j - 2] == '.' || (s[j - 2] == '>' && j >= 3 && s[j - 3] == '-'));
                /* (and the first parameter of a block, |k: 1|) */
                bool first_param = L->in_params && !L->def_at && L->prev == TK_BAR;
                if (top == TK_LBRACE || top == TK_LPCALL || L->prev == TK_CMD || L->prev == TK_COMMA || L->prev == TK_LBRACK || dotparen || first_param) {
                    push_tok(L, TK_LABEL, st, e - st);
                    i = e + 1;
                    continue;
                }
            }
            bool after_dot = L->prev == TK_DOT || L->prev == TK_ANDDOT;
            if (L->prev == TK_DEF) { /* def NAME: the method's name, whatever it spells */
                size_t p = e;
                while (p < n && (s[p] == ' ' || s[p] == '\t')) p++;
                if (p < n && s[p] == '.' && p == e)
                    return lex_error(L, st, "unsupported Ruby construct: a method of an object (def %.*s.)", s + st, (int)(e - st));
                if (p < n && p > e && (ident_start((unsigned char)s[p]) || s[p] == '*' || s[p] == '&'))
                    return lex_error(L, p, "unsupported Ruby construct: def parameters without parentheses%.*s", "", 0);
                if (p < n && p == e && s[p] == '=' && s[p + 1] != '=' && s[p + 1] != '~')   /* (def name = value: endless) */
                    return lex_error(L, p, "unsupported Ruby construct: a setter method (def %.*s=)", s + st, (int)(e - st));
                push_tok(L, TK_IDENT, st, e - st);
                L->def_name = true;
                i = e;
                continue;
            }
            int kw = after_dot ? 0 : keyword(s + st, e - st);
            if (kw) {
                bool mod = was_value || L->prev == TK_NEXT || L->prev == TK_BREAK || L->prev == TK_RETURN || L->prev == TK_RETRY;
                if (kw == TK_IF && mod) kw = TK_IF_MOD;
                if (kw == TK_UNLESS && mod) kw = TK_UNLESS_MOD;
                if (kw == TK_WHILE && mod) kw = TK_WHILE_MOD;
                if (kw == TK_UNTIL && mod) kw = TK_UNTIL_MOD;
                if (kw == TK_RESCUE && mod) kw = TK_RESCUE_MOD;
                if (kw == TK_DEFINED && e < n && s[e] == '(') kw = TK_DEFINED_P; /* defined?(x).y: a primary */
                if (kw == TK_DO && L->cond_at == L->depth + 1) { kw = TK_DO_COND; L->cond_at = 0; }
                else if (kw == TK_DO && L->cmd_at == L->depth + 1) { kw = TK_DO_BLOCK; L->cmd_at = 0; }
                if (kw == TK_FOR || kw == TK_WHILE || kw == TK_UNTIL) L->cond_at = L->depth + 1;
                push_tok(L, kw, st, e - st);
                if (kw == TK_DO || kw == TK_DO_BLOCK) L->want_params = true;
                i = e;
                continue;
            }
            if (!after_dot)
                for (int k = 0; unsupported_kw[k]; k++)
                    if (strlen(unsupported_kw[k]) == e - st && memcmp(s + st, unsupported_kw[k], e - st) == 0)
                        return lex_error(L, st, "unsupported Ruby construct '%.*s'", s + st, (int)(e - st));
            bool is_const = !after_dot && c >= 'A' && c <= 'Z';
            if (!is_const && !after_dot && e < n && s[e] == ':' && e + 1 < n && s[e + 1] == ':')
                return lex_error(L, st, "unsupported Ruby construct '%.*s::'", s + st, (int)(e - st));
            if (is_const && e - st == 3 && memcmp(s + st, "ERB", 3) == 0 && n - e >= 6 && memcmp(s + e, "::Util", 6) == 0 &&
                !(n - e > 6 && (ident_start((unsigned char)s[e + 6]) || (s[e + 6] >= '0' && s[e + 6] <= '9') || s[e + 6] == ':'))) {
                /* ERB::Util (html_escape, h, url_encode, u): one constant */
                push_tok(L, TK_CONST, st, e + 6 - st);
                i = e + 6;
                continue;
            }
            if (is_const && e + 1 < n && s[e] == ':' && s[e + 1] == ':') {
                /* the numeric constants of Float and Math (Float::INFINITY, Math::PI): one constant */
                static const char *const num_consts[] = { "Float::INFINITY", "Float::NAN", "Float::EPSILON",
                    "Float::MAX", "Float::MIN", "Float::DIG", "Math::PI", "Math::E",
                    /* and JSON's exception classes (rescue JSON::GeneratorError) */
                    "JSON::JSONError", "JSON::GeneratorError", "JSON::NestingError", "JSON::ParserError",
                    /* and RubyGems' version class, which Puppet and Chef templates compare versions with */
                    "Gem::Version", NULL };
                size_t q = e + 2;
                while (q < n && (ident_start((unsigned char)s[q]) || (s[q] >= '0' && s[q] <= '9'))) q++;
                bool num = false;
                for (int k = 0; num_consts[k] && !num; k++)
                    num = strlen(num_consts[k]) == q - st && memcmp(s + st, num_consts[k], q - st) == 0;
                if (num && !(q + 1 < n && s[q] == ':' && s[q + 1] == ':')) {
                    push_tok(L, TK_CONST, st, q - st);
                    i = q;
                    continue;
                }
                /* another path of constants (Puppet::Error): one constant, refused when it runs (Ruby looks it up
                 * only then: `raise Puppet::Error, "..." unless @x` renders while @x is set) */
                q = e;
                while (q + 2 < n && s[q] == ':' && s[q + 1] == ':' && s[q + 2] >= 'A' && s[q + 2] <= 'Z') {
                    q += 2;
                    while (q < n && (ident_start((unsigned char)s[q]) || (s[q] >= '0' && s[q] <= '9'))) q++;
                }
                if (q + 1 < n && s[q] == ':' && s[q + 1] == ':')
                    return lex_error(L, st, "unsupported Ruby construct '%.*s::' (constant paths)", s + st, (int)(q - st));
                push_tok(L, TK_CONST, st, q - st);
                i = q;
                continue;
            }
            int kind = is_const ? TK_CONST : TK_IDENT;
            if (L->in_params) { add_local(L, s + st, e - st); push_tok(L, TK_IDENT, st, e - st); i = e; continue; }
            /* a command call: name, blanks, then something that starts an argument */
            if (!is_const && e < n && (s[e] == ' ' || s[e] == '\t')) {
                size_t p = e;
                while (p < n && (s[p] == ' ' || s[p] == '\t')) p++;
                if (p < n && arg_starts(L, p)) kind = TK_CMD;
                /* a local's name followed by a name, number, string or @ivar is a command call too (Ruby's parser
                 * reads `x y` as x(y) whatever x is: NoMethodError when it runs); what may continue an expression
                 * (`x -1`, `x [0]`, `x *y`, `x /re/`, `x :a`, `x (1)`) stays the local */
                if (kind == TK_CMD && !after_dot && is_local(L, s + st, e - st)) {
                    unsigned char c0 = (unsigned char)s[p];
                    if (!(ident_start(c0) || (c0 >= '0' && c0 <= '9') || c0 == '\'' || c0 == '"' || c0 == '@')) kind = TK_IDENT;
                }
                /* `s.scan /re/`: after a blank, a `/` that no blank or `=` follows starts a regex argument of a
                 * method call, as Ruby reads it (a bare name may be a local from the binding: there it divides) */
                if (after_dot && p < n && s[p] == '/' && p + 1 < n && s[p + 1] != ' ' && s[p + 1] != '\t' &&
                    s[p + 1] != '\n' && s[p + 1] != '=')
                    kind = TK_CMD;
                /* a bare name: Ruby reads that regex argument too unless the name is a local of the binding (a
                 * state key); the `/` is flagged for the lowering, which divides only then */
                if (!after_dot && kind == TK_IDENT && !is_local(L, s + st, e - st) && p < n && s[p] == '/' && p + 1 < n && s[p + 1] != ' ' &&
                    s[p + 1] != '\t' && s[p + 1] != '\n' && s[p + 1] != '=')
                    L->amb_slash = p + 1;
            }
            /* `include?x`: an argument right after a `?` method name is a command argument, as in Ruby */
            if (!is_const && s[e - 1] == '?' && e < n &&
                (ident_start((unsigned char)s[e]) || (s[e] >= '0' && s[e] <= '9') || s[e] == '"' || s[e] == '\'' || s[e] == '@'))
                kind = TK_CMD;
            /* `name =` declares a local variable */
            if (kind == TK_IDENT && !after_dot) {
                size_t p = e;
                while (p < n && (s[p] == ' ' || s[p] == '\t')) p++;
                if (p < n && s[p] == '=' && s[p + 1] != '=' && s[p + 1] != '~' && s[p + 1] != '>') add_local(L, s + st, e - st);
                if (p + 1 < n && strchr("+-*/|&", s[p]) && s[p + 1] == '=') add_local(L, s + st, e - st);
                if (p + 2 < n && (s[p] == '|' || s[p] == '&') && s[p + 1] == s[p] && s[p + 2] == '=') add_local(L, s + st, e - st);
                /* `a, b = v`: a multiple assignment declares each name before the `=` */
                if (p < n && s[p] == ',') {
                    /* (once per run: a name inside the run last scanned has its answer, so a long list
                     * of names, `f(a0, a1, ...)` or `->(a0, a1, ...)`, is not scanned once per name) */
                    if (st >= L->masgn_end) {
                        size_t q = p;
                        bool names = true;
                        while (names && q < n && s[q] == ',') {
                            q++;
                            while (q < n && (s[q] == ' ' || s[q] == '\t')) q++;
                            if (q < n && s[q] == '@') q++;
                            if (!(q < n && ident_start((unsigned char)s[q]))) { names = false; break; }
                            while (q < n && (ident_start((unsigned char)s[q]) || (s[q] >= '0' && s[q] <= '9'))) q++;
                            while (q < n && (s[q] == ' ' || s[q] == '\t')) q++;
                        }
                        L->masgn_end = q;
                        L->masgn_decl = names && q + 1 < n && s[q] == '=' && s[q + 1] != '=' && s[q + 1] != '~' && s[q + 1] != '>';
                    }
                    if (L->masgn_decl) add_local(L, s + st, e - st);
                }
            }
            push_tok(L, kind, st, e - st);
            i = e;
            continue;
        }
        if ((c >= '0' && c <= '9') || ((c == '-' || c == '+') && !was_value && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')) {
            size_t e = i;
            if (c == '-' || c == '+') e++;
            bool flt = false;
            if (s[e] == '0' && (s[e + 1] == 'x' || s[e + 1] == 'X' || s[e + 1] == 'b' || s[e + 1] == 'B' || s[e + 1] == 'o')) {
                e += 2;
                while (e < n && (ident_char((unsigned char)s[e]))) e++;
            } else {
                while (e < n && ((s[e] >= '0' && s[e] <= '9') || s[e] == '_')) e++;
                if (e + 1 < n && s[e] == '.' && s[e + 1] >= '0' && s[e + 1] <= '9') {
                    flt = true;
                    e++;
                    while (e < n && ((s[e] >= '0' && s[e] <= '9') || s[e] == '_')) e++;
                }
                if (e < n && (s[e] == 'e' || s[e] == 'E')) {
                    size_t p = e + 1;
                    if (p < n && (s[p] == '+' || s[p] == '-')) p++;
                    if (p < n && s[p] >= '0' && s[p] <= '9') {
                        flt = true;
                        e = p;
                        while (e < n && s[e] >= '0' && s[e] <= '9') e++;
                    }
                }
            }
            if (e < n && (s[e] == 'r' || s[e] == 'i')) {
                /* 3r, 1.5r: Rational literals (the token keeps its r: tpl_erb_number makes Rational("3"));
                 * 2i, 3ri: Complex literals (tpl has no Complex) */
                size_t q = e + (s[e] == 'r' && e + 1 < n && s[e + 1] == 'i' ? 2 : 1);
                bool hex = s[st + (c == '-' || c == '+')] == '0' && e > st + 1 + (c == '-' || c == '+') &&
                           strchr("xXbBo", s[st + 1 + (c == '-' || c == '+')]) != NULL;
                if ((q >= n || !ident_char((unsigned char)s[q])) && s[q - 1] == 'r' && !hex) {
                    push_tok(L, flt ? TK_FLOAT : TK_INTEGER, st, q - st);
                    i = q;
                    continue;
                }
                if (q >= n || !ident_char((unsigned char)s[q]))
                    return lex_error(L, st, s[q - 1] == 'r' ? "unsupported Ruby construct: a Rational literal (%.*s)"
                                                            : "unsupported Ruby construct: a Complex literal (%.*s)",
                                     s + st, (int)(q - st));
            }
            push_tok(L, flt ? TK_FLOAT : TK_INTEGER, st, e - st);
            i = e;
            continue;
        }
        if (c == '\'' || c == '"') {
            size_t e = skip_string(s, n, i, (char)c);
            if (e == TOO_DEEP) return lex_error(L, st, "string interpolation nested more than 256 deep%.*s", "", 0);
            if (e == (size_t)-1) return lex_error(L, st, "unterminated string literal%.*s", "", 0);
            if (c == '"' && gvar_eats_close(s, st + 1, e - 1))
                return lex_error(L, e - 2, "global variables (%.*s) are not supported", "$", 1);
            /* "key": / 'key': (no space before the colon, not ::) where a label may stand: a Symbol key, {"a b": 1} is
             * {:"a b"=>1}; not after the ternary's ? (c ? "a": "b" is the ternary, as Ruby's) */
            if (e < n && s[e] == ':' && !(e + 1 < n && s[e + 1] == ':') && L->prev != TK_QMARK) {
                int top = L->depth ? L->stack[L->depth - 1] : 0;
                if (top == TK_LBRACE || top == TK_LPCALL || L->prev == TK_CMD || L->prev == TK_COMMA || L->prev == TK_LBRACK) {
                    push_tok(L, c == '"' ? TK_DLABEL : TK_SLABEL, st, e - st);
                    i = e + 1;
                    continue;
                }
            }
            push_tok(L, c == '"' ? TK_DSTRING : TK_SSTRING, st, e - st);
            i = e;
            continue;
        }
        if (c == ':' && !was_value && i + 1 < n && strchr("+-*/%<>=!~^&|[", s[i + 1]) && s[i + 1] != 0) {
            /* operator symbols (:+, :<=>, :[] ...), as inject(:+) and send use them */
            static const char *const ops[] = { "[]=", "[]", "**", "<=>", "===", "==", "=~", "!=", "!~", "<<", ">>", "<=", ">=",
                                               "+@", "-@", "+", "-", "*", "/", "%", "<", ">", "!", "~", "^", "&", "|", NULL };
            size_t ol = 0;
            for (int k = 0; ops[k] && !ol; k++)
                if (i + 1 + strlen(ops[k]) <= n && memcmp(s + i + 1, ops[k], strlen(ops[k])) == 0) ol = strlen(ops[k]);
            if (ol) {
                push_tok(L, TK_SYMBOL, st, ol + 1);
                i += ol + 1;
                continue;
            }
        }
        if (c == ':' && i + 1 < n && (ident_start((unsigned char)s[i + 1]) || s[i + 1] == '"')) {
            size_t e = i + 1;
            if (s[e] == '"') {
                e = skip_string(s, n, e, '"');
                if (e == TOO_DEEP) return lex_error(L, st, "string interpolation nested more than 256 deep%.*s", "", 0);
                if (e == (size_t)-1) return lex_error(L, st, "unterminated symbol literal%.*s", "", 0);
                if (gvar_eats_close(s, i + 2, e - 1))
                    return lex_error(L, e - 2, "global variables (%.*s) are not supported", "$", 1);
            } else {
                while (e < n && ident_char((unsigned char)s[e])) e++;
                if (e < n && (s[e] == '?' || s[e] == '!' || s[e] == '=') && !(e + 1 < n && (s[e + 1] == '=' || s[e + 1] == '>'))) e++;
            }
            push_tok(L, TK_SYMBOL, st, e - st);
            i = e;
            continue;
        }
        /* heredocs: <<ID, <<-ID (indented terminator), <<~ID (indentation removed), 'ID' (no escapes or
         * interpolation) and "ID"; the body is the script's next lines up to the terminator line. The
         * token is the body with one byte either side (the line break before it and the terminator
         * line's first byte), flagged 'h' (or '~': dedent) for the literal's action. */
        if (c == '<' && i + 2 < n && s[i + 1] == '<' && (!was_value || L->prev == TK_CMD)) {
            size_t p = i + 2;
            char hk = 0, q = 0;
            if (s[p] == '-' || s[p] == '~') hk = s[p++];
            if (p < n && (s[p] == '\'' || s[p] == '"' || s[p] == '`')) q = s[p++];
            size_t id0 = p;
            while (p < n && ident_char((unsigned char)s[p])) p++;
            size_t idn = p - id0;
            bool ok = idn > 0 && (q ? p < n && s[p] == q : ident_start((unsigned char)s[id0]) && (hk || (s[id0] >= 'A' && s[id0] <= 'Z') || s[id0] == '_'));
            if (ok && q == '`') return lex_error(L, st, "unsupported Ruby construct: a command heredoc (%.*s)", s + st, (int)(p + 1 - st));
            if (ok) {
                if (q) p++;
                size_t body = L->hd_end;   /* a second heredoc on the line: after the first one's terminator */
                if (!body) {
                    size_t e = p;
                    while (e < n && s[e] != '\n') e++;
                    if (e >= n) return lex_error(L, st, "unterminated heredoc (%.*s): its body starts on the next line", s + st, (int)(p - st));
                    L->hd_nl = e;
                    body = e + 1;
                }
                size_t ln = body, term = (size_t)-1, after = 0;
                while (ln < n) {
                    size_t le = ln;
                    while (le < n && s[le] != '\n') le++;
                    for (size_t k = ln; k < le; k++)
                        if (s[k] == M_PUT || s[k] == M_INS_OPEN || s[k] == M_INS_CLOSE)
                            return lex_error(L, st, "unsupported Ruby construct: a heredoc (%.*s) whose body leaves its ERB tag", s + st, (int)(p - st));
                    size_t a = ln;
                    if (hk) while (a < le && (s[a] == ' ' || s[a] == '\t')) a++;
                    size_t b = le;
                    if (b > a && s[b - 1] == '\r') b--;
                    if (b - a == idn && memcmp(s + a, s + id0, idn) == 0) { term = ln; after = le < n ? le + 1 : le; break; }
                    ln = le + 1;
                }
                if (term == (size_t)-1)
                    return lex_error(L, st, "unterminated heredoc (%.*s): no terminator line in its ERB tag", s + st, (int)(p - st));
                L->hd_end = after;
                L->next_flag = hk == '~' ? '~' : 'h';
                push_tok(L, q == '\'' ? TK_SSTRING : TK_DSTRING, body - 1, term + 1 - (body - 1));
                i = p;
                continue;
            }
        }
        if (c == '/' && !was_value) {
            size_t e = i + 1;
            while (e < n && s[e] != '/' && s[e] != '\n') { if (s[e] == '\\') e++; e++; }
            if (e >= n || s[e] != '/') return lex_error(L, st, "unterminated regular expression%.*s", "", 0);
            if (gvar_eats_close(s, i + 1, e)) return lex_error(L, e - 2, "global variables (%.*s) are not supported", "$", 1);
            e++;
            while (e < n && (s[e] == 'i' || s[e] == 'x' || s[e] == 'm')) e++;
            push_tok(L, TK_REGEX, st, e - st);
            regex_match_locals(L, s, n, st, e);
            i = e;
            continue;
        }
        if (c == '%' && !was_value && i + 2 < n && s[i + 2] && strchr("wWiI", s[i + 1]) && strchr("[({<|!/^~", s[i + 2])) {
            /* %w[a b] / %i[a b] / %W[a#{x} b] / %I[...]: word arrays (brackets nest, a backslash escapes the next
             * byte; tpl_erb_words splits them) */
            char open = s[i + 2], close = open == '[' ? ']' : open == '(' ? ')' : open == '{' ? '}' : open == '<' ? '>' : open;
            bool interp = s[i + 1] == 'W' || s[i + 1] == 'I';
            size_t e = i + 3;
            int d = 1;
            while (e < n && s[e] != M_PUT && s[e] != M_INS_OPEN && s[e] != M_INS_CLOSE) {
                if (s[e] == '\\' && e + 1 < n) { e += 2; continue; }
                if (interp && s[e] == '#' && e + 1 < n && s[e + 1] == '{') {
                    /* (an interpolation: skip_string's scan of "#{...}" from the '#') */
                    size_t k = skip_interp(s, n, e);
                    if (k == (size_t)-1 || k == TOO_DEEP) break;
                    e = k;
                    continue;
                }
                if (open != close && s[e] == open) d++;
                else if (s[e] == close && --d == 0) break;
                e++;
            }
            if (e >= n || s[e] != close) return lex_error(L, st, "unterminated %.*s literal", s + st, 2);
            if (interp && gvar_eats_close(s, i + 3, e)) return lex_error(L, e - 2, "global variables (%.*s) are not supported", "$", 1);
            push_tok(L, TK_WORDS, st, e + 1 - st);
            i = e + 1;
            continue;
        }
        if (c == '%' && !was_value && i + 2 < n && s[i + 1] == 'r' && strchr("([{<|!^/", s[i + 2])) {
            /* %r{...}flags: a regex literal with other delimiters (brackets nest; a backslash escapes the next byte) */
            char open = s[i + 2], close = open == '(' ? ')' : open == '[' ? ']' : open == '{' ? '}' : open == '<' ? '>' : open;
            size_t e = i + 3;
            int d = 1;
            while (e < n && s[e] != M_PUT && s[e] != M_INS_OPEN && s[e] != M_INS_CLOSE) {
                if (s[e] == '\\' && e + 1 < n) { e += 2; continue; }
                if (open != close && s[e] == open) d++;
                else if (s[e] == close && --d == 0) break;
                e++;
            }
            if (e >= n || s[e] != close) return lex_error(L, st, "unterminated %.*s literal", s + st, 2);
            if (gvar_eats_close(s, i + 3, e)) return lex_error(L, e - 2, "global variables (%.*s) are not supported", "$", 1);
            e++;
            while (e < n && (s[e] == 'i' || s[e] == 'x' || s[e] == 'm')) e++;
            push_tok(L, TK_REGEX, st, e - st);
            regex_match_locals(L, s, n, st, e);
            i = e;
            continue;
        }
        if (c == '%' && !was_value && i + 2 < n &&
            (((s[i + 1] == 'q' || s[i + 1] == 'Q') && strchr("([{<|!^", s[i + 2])) || (s[i + 1] && strchr("([{<|!^", s[i + 1])))) {
            /* %q(...) (single-quoted), %Q(...) and %(...) (double-quoted): a string with other delimiters
             * (brackets nest; a backslash escapes the next byte) */
            size_t p = s[i + 1] == 'q' || s[i + 1] == 'Q' ? i + 2 : i + 1;
            char open = s[p], close = open == '(' ? ')' : open == '[' ? ']' : open == '{' ? '}' : open == '<' ? '>' : open;
            size_t e = p + 1;
            int d = 1;
            while (e < n && s[e] != M_PUT && s[e] != M_INS_OPEN && s[e] != M_INS_CLOSE) {
                if (s[e] == '\\' && e + 1 < n) { e += 2; continue; }
                if (open != close && s[e] == open) d++;
                else if (s[e] == close && --d == 0) break;
                e++;
            }
            if (e >= n || s[e] != close) return lex_error(L, st, "unterminated %.*s literal", s + st, (int)(p + 1 - st));
            if (s[i + 1] != 'q' && gvar_eats_close(s, p + 1, e))
                return lex_error(L, e - 2, "global variables (%.*s) are not supported", "$", 1);
            push_tok(L, s[i + 1] == 'q' ? TK_SSTRING : TK_DSTRING, st, e + 1 - st);
            i = e + 1;
            continue;
        }
        if ((c == '`' && !was_value) || (c == '%' && !was_value && i + 1 < n && s[i + 1] == 'x'))
            return lex_error(L, st, "unsupported Ruby construct: %.*s (a command: a tpl template reads no files, environment or "
                             "processes: pass what it needs in the state)", c == '`' ? "`backticks`" : "%x()", c == '`' ? 11 : 4);
        if (c == '%' && !was_value && i + 1 < n && s[i + 1] != ' ' && s[i + 1] != '=')
            return lex_error(L, st, "unsupported Ruby construct '%.*s' (percent literals)", s + st, 2);
        if (c == '?' && !was_value && i + 1 < n && s[i + 1] != ' ') {
            /* ?a, ?<, ?\n: a character literal, a one-character String (tpl_erb_sstring, flag 'c'); ?ab (no
             * literal: Ruby's syntax error) and other escapes refused */
            size_t len = 0;
            unsigned char d = (unsigned char)s[i + 1];
            if (d == '\\') len = i + 2 < n && strchr("ntsr0eabfv\\'\"", s[i + 2]) && s[i + 2] ? 3 : 0;
            else if (d > 0x20 && d < 0x7f) len = 2;
            else if (d >= 0xC2 && d <= 0xF4) {
                size_t k = d >= 0xF0 ? 4 : d >= 0xE0 ? 3 : 2;
                len = 1 + k;
                for (size_t j = 2; j <= k; j++)
                    if (i + j >= n || ((unsigned char)s[i + j] & 0xC0) != 0x80) len = 0;
            }
            bool word = d == '_' || (d >= '0' && d <= '9') || ((d | 0x20) >= 'a' && (d | 0x20) <= 'z') || d >= 0x80;
            if (len && i + len < n && word) {
                unsigned char f = (unsigned char)s[i + len];
                if (f == '_' || (f >= '0' && f <= '9') || ((f | 0x20) >= 'a' && (f | 0x20) <= 'z') || f >= 0x80) len = 0;
            }
            if (!len) return lex_error(L, st, "unsupported Ruby construct '%.*s' (character literals)", s + st, 2);
            L->next_flag = 'c';
            push_tok(L, TK_SSTRING, st, len);
            i += len;
            continue;
        }
        /* operators and punctuation */
        const char *YYCURSOR = s + i, *YYMARKER = YYCURSOR, *YYLIMIT = s + n;
        int kind = 0;
        (void)YYLIMIT;
        (void)YYMARKER;
        /*!re2c
            re2c:define:YYCTYPE = "unsigned char";
            re2c:yyfill:enable = 0;
            "**"  { kind = TK_POW; goto op; }
            "*"   { kind = TK_STAR; goto op; }
            "+"   { kind = was_value ? TK_PLUS : TK_UPLUS; goto op; }
            "-"   { kind = was_value ? TK_MINUS : TK_UMINUS; goto op; }
            "/"   { kind = TK_SLASH; goto op; }
            "%"   { kind = TK_PERCENT; goto op; }
            "+=" | "-=" | "*=" | "/=" | "||=" | "&&=" | "**=" | "%=" { kind = TK_OP_ASGN; goto op; }
            "|=" | "&=" | "^=" | "<<=" | ">>=" { if (!was_value || L->in_params) goto unsupported; kind = TK_OP_ASGN; goto op; }
            "<=>" { kind = TK_CMP; goto op; }
            "===" { kind = TK_EQQ; goto op; }
            "=="  { kind = TK_EQ; goto op; }
            "!="  { kind = TK_NE; goto op; }
            "=~"  { kind = TK_MATCH; goto op; }
            "!~"  { kind = TK_NMATCH; goto op; }
            "=>"  { kind = TK_ASSOC; goto op; }
            "="   { kind = TK_ASSIGN; goto op; }
            "<<"  { kind = TK_LSHIFT; goto op; }
            ">>"  { kind = TK_RSHIFT; goto op; }
            "<="  { kind = TK_LE; goto op; }
            ">="  { kind = TK_GE; goto op; }
            "<"   { kind = TK_LT; goto op; }
            ">"   { kind = TK_GT; goto op; }
            "&&"  { kind = TK_ANDAND; goto op; }
            "||"  { kind = L->want_params ? TK_BAR : TK_OROR; goto op; }
            "|"   { kind = TK_BAR; goto op; }
            "&"   { if (!was_value) goto unsupported; kind = TK_AMP; goto op; }
            "^"   { if (!was_value) goto unsupported; kind = TK_CARET; goto op; }
            "!"   { kind = TK_BANG; goto op; }
            "..." { kind = TK_DOT3; goto op; }
            ".."  { kind = TK_DOT2; goto op; }
            "&."  { kind = TK_ANDDOT; goto op; }
            "->"  { kind = TK_LAMBDA; goto op; }
            "::"  { goto unsupported; }
            "."   { kind = TK_DOT; goto op; }
            ","   { kind = TK_COMMA; goto op; }
            "?"   { kind = TK_QMARK; goto op; }
            ":"   { kind = TK_COLON; goto op; }
            "("   { kind = (L->prev == TK_IDENT || L->prev == TK_CONST) && !spaced ? TK_LPCALL : TK_LPAREN; goto op; }
            ")"   { kind = TK_RPAREN; goto op; }
            "["   { kind = (was_value && !spaced) || (L->prev == TK_IDENT && is_local(L, s + L->prev_off, L->prev_end - L->prev_off)) ? TK_LBRACK_IDX : TK_LBRACK; goto op; }
            "]"   { kind = TK_RBRACK; goto op; }
            "{"   { kind = L->prev == TK_IDENT || L->prev == TK_RPAREN || L->prev == TK_CONST || L->prev == TK_LAMBDA ? TK_LBRACE_BLK : TK_LBRACE; goto op; }
            "}"   { kind = TK_RBRACE; goto op; }
            *     { goto unsupported; }
        */
    unsupported:
        return lex_error(L, st, "unsupported Ruby syntax '%.*s'", s + st, (int)(s[st] & 0x80 ? 1 : (YYCURSOR - (s + st) > 0 ? YYCURSOR - (s + st) : 1)));
    op: {
            size_t len = (size_t)(YYCURSOR - (s + i));
            if (kind == TK_BAR && L->want_params && len == 2) {
                /* `{ || ...}`: empty parameter list */
                push_tok(L, TK_BAR, st, 1);
                push_tok(L, TK_BAR, st + 1, 1);
                L->want_params = false;
                i += 2;
                continue;
            }
            if (kind == TK_BAR) {
                if (L->want_params) { L->in_params = true; L->want_params = false; }
                else if (L->in_params) L->in_params = false;
                else if (was_value && len == 1) kind = TK_PIPE;   /* binary |: Array union, Integer or, true | x */
                else return lex_error(L, st, "unsupported Ruby operator '%.*s'", "|", 1);
            } else {
                L->want_params = false;
            }
            if (kind == TK_LPAREN || kind == TK_LPCALL || kind == TK_LBRACK || kind == TK_LBRACK_IDX ||
                kind == TK_LBRACE || kind == TK_LBRACE_BLK) {
                if (L->depth >= 256) return lex_error(L, st, "%.*snesting too deep", "", 0);
                L->stack[L->depth++] = kind;
            } else if (kind == TK_RPAREN || kind == TK_RBRACK || kind == TK_RBRACE) {
                int open = L->depth ? L->stack[L->depth - 1] : 0;
                bool ok = (kind == TK_RPAREN && (open == TK_LPAREN || open == TK_LPCALL)) ||
                          (kind == TK_RBRACK && (open == TK_LBRACK || open == TK_LBRACK_IDX)) ||
                          (kind == TK_RBRACE && (open == TK_LBRACE || open == TK_LBRACE_BLK));
                if (!ok) return lex_error(L, st, "syntax error, unexpected '%.*s'", s + st, 1);
                L->depth--;
            }
            if (kind == TK_LBRACE_BLK) L->want_params = true;
            if (kind == TK_SLASH && L->amb_slash == st + 1) L->next_flag = 'r';
            bool def_open = kind == TK_LPCALL && L->def_name;
            bool def_close = kind == TK_RPAREN && L->def_at && L->depth + 1 == L->def_at;
            if (def_close) { L->in_params = false; L->def_at = 0; }
            push_tok(L, kind, st, len);
            if (def_close) L->def_body = true;   /* def f(t) ?< ... end, def f(t) -1 end: the body's first value */
            if (def_open) { L->in_params = true; L->def_at = L->depth; } /* def f(a, b = 1, c: 2): parameters */
            i += len;
            continue;
        }
    }
    return !L->ctx->failed;
}

/* ------------------------------------------------------------------ parser driver */

void *ErbParseAlloc(void *(*mallocProc)(size_t));
void ErbParseFree(void *p, void (*freeProc)(void *));
void ErbParse(void *p, int major, tpl_token minor, tpl_pctx *ctx);

/* The ERB parse state shared with the grammar actions through ctx->tokens (see erb_state). */
typedef struct erb_state {
    erb_script sc;
    const char *orig;     /* the template source (for __LINE__) */
    size_t norig;
    int line_shift;       /* 1 when a frozen_string_literal magic comment adds a line to the script */
} erb_state;

static erb_state *state_of(tpl_pctx *c) { return (erb_state *)c->front; }

/* The text of PUT marker t in script (its source span [*off, *end)): the source's bytes, each
 * `<%%` read as `<%` (as erb_build_script took them), borrowed from the source unless it has
 * one (then copied into a). A NULL string when out of memory. */
static tpl_value erb_put_text(erb_state *es, tpl_arena *a, const char *script, tpl_token t, uint32_t *off, uint32_t *end)
{
    size_t len = 0;
    for (const char *d = script + t.off + 1; *d >= '0' && *d <= '9'; d++) len = len * 10 + (size_t)(*d - '0');
    *off = sc_src(&es->sc, t.off);
    if (*off > es->norig || len > es->norig - *off) len = 0; /* (cannot happen: the marker is ours) */
    *end = *off + (uint32_t)len;
    const char *p = es->orig + *off;
    const char *pct = len >= 3 ? memmem(p, len, "<%%", 3) : NULL;
    if (!pct) return tpl_v_str(p, len);
    char *o = tpl_arena_alloc(a, len + 1);
    if (!o) return tpl_v_str(NULL, 0);
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        if (i + 3 <= len && p[i] == '<' && p[i + 1] == '%' && p[i + 2] == '%') { o[k++] = '<'; o[k++] = '%'; i += 3; }
        else o[k++] = p[i++];
    }
    o[k] = 0;
    return tpl_v_str(o, k);
}

/* The parser fed as the tokenizer goes (issue 13 §1: the script's tokens are never all in
 * memory). A parse error is put aside while the tokenizer runs on: a scan error anywhere in the
 * range wins over it, as when the whole range was tokenized before parsing. */
typedef struct erb_feed {
    tpl_pctx *c;
    void *parser;
    uint32_t from;        /* the range's start in the script (token offsets are relative to it) */
    /* open if/unless/case/do blocks, to say which one end of input left without its `end` */
    uint32_t open_at[64];
    size_t nopen, deep;
    bool pfailed, pnomem; /* the parse failed (its error set aside in perr_off, pmsg) */
    uint32_t perr_off;
    char pmsg[sizeof ((tpl_pctx *)0)->msg];
} erb_feed;

static void feed_tok(erb_feed *f, tpl_token t)
{
    if (f->pfailed) return;
    tpl_pctx *c = f->c;
    t.off += f->from;
    int k = t.kind;
    if (k == TK_IF || k == TK_UNLESS || k == TK_CASE || k == TK_FOR || k == TK_WHILE || k == TK_UNTIL || k == TK_DO || k == TK_DO_BLOCK ||
        k == TK_BEGIN) {
        if (f->nopen < 64) f->open_at[f->nopen++] = t.off;
        else f->deep++;
    } else if (k == TK_END) {
        if (f->deep) f->deep--;
        else if (f->nopen) f->nopen--;
    }
    ErbParse(f->parser, k, t, c);
    if (c->failed) { /* set aside; the tokenizer goes on (its errors come first) */
        f->pfailed = true;
        f->pnomem = c->nomem;
        f->perr_off = c->err_off;
        memcpy(f->pmsg, c->msg, sizeof f->pmsg);
        c->failed = c->nomem = false;
    }
}

/* Runs the Lemon parser over the tokens of script bytes [from, to): the template's (top: its
 * statements go to c->top when it streams) or a #{} body's (never streamed). */
static bool parse_range(tpl_pctx *c, size_t from, size_t to, tpl_node **root, bool top)
{
    void *parser = ErbParseAlloc(malloc);
    if (!parser) { tpl_pctx_nomem(c, 0); return false; }
    erb_feed f;
    memset(&f, 0, sizeof f);
    f.c = c;
    f.parser = parser;
    f.from = (uint32_t)from;
    rlex L = { 0 };
    L.ctx = c;
    L.s = c->src + from;
    L.n = to - from;
    L.feed = &f;
    L.top_script = top;
    if (top) L.larena = c->keep;
    tpl_node *save = c->root;
    void (*save_top)(void *, tpl_node *) = c->top;
    if (!top) c->top = NULL;
    c->root = NULL;
    bool ok = ruby_lex(&L);
    if (ok && f.pfailed) { /* the parse error, now that the whole range scanned */
        c->failed = true;
        c->nomem = f.pnomem;
        c->err_off = f.perr_off;
        memcpy(c->msg, f.pmsg, sizeof c->msg);
        ok = false;
    }
    if (ok) {
        tpl_token eof = { .off = (uint32_t)to };
        ErbParse(parser, 0, eof, c);
        if (c->failed && (c->err_off == (uint32_t)to || c->err_off == (uint32_t)c->n) && f.nopen) {
            uint32_t at = f.open_at[f.nopen - 1];
            const char *kw = c->src + at;
            int kwlen = 0;
            while (kwlen < 6 && kw[kwlen] >= 'a' && kw[kwlen] <= 'z') kwlen++;
            c->err_off = at;
            snprintf(c->msg, sizeof c->msg,
                     "syntax error, unexpected end of template: this '%.*s' is never closed (missing 'end')", kwlen, kw);
        }
    }
    ErbParseFree(parser, free);
    *root = c->root;
    c->root = save;
    c->top = save_top;
    return ok && !c->failed && *root;
}

static bool is_elsif(const tpl_node *n) { return n->kind == TPL_N_IF && n->c && n->c->kind == TPL_N_IF && !n->c->next; }

/* Maps every node's script offset to its source offset (clear: takes the marks off again). The
 * links of an elsif chain (an IF whose c is one IF) are walked in a loop, as siblings are. */
static void map_offsets(erb_script *sc, tpl_node *n, int depth, bool clear)
{
    for (; n; n = n->next) {
        for (tpl_node *x = n; x; x = is_elsif(x) ? x->c : NULL) {
            if (!clear) {
                if (x->off & 0x80000000u) break;   /* already mapped (shared subtrees) */
                x->off = x->off < sc->n ? sc_src(sc, x->off) : (sc->n ? sc_src(sc, sc->n - 1) + 1 : 0);
                x->off |= 0x80000000u;
            } else {
                if (!(x->off & 0x80000000u)) break;
                x->off &= 0x7FFFFFFFu;
            }
            if (depth < 2000) {
                map_offsets(sc, x->a, depth + 1, clear);
                map_offsets(sc, x->b, depth + 1, clear);
                if (!is_elsif(x)) map_offsets(sc, x->c, depth + 1, clear);
                map_offsets(sc, tpl_node_d(x), depth + 1, clear);
                map_offsets(sc, tpl_node_e(x), depth + 1, clear);
            }
        }
    }
}

/* ERB::Compiler#detect_magic_comment (Ruby 3.1): the comment tags that start the template, one right
 * after the other (`\G<%#(.*)%>`, greedy within a line); an Emacs-style `-*- ... -*-` comment is read
 * inside; a `coding` comment wins over a frozen_string_literal one. Returns the value of the last
 * frozen_string_literal comment: -1 none, 1 "true", 0 anything else. */
static int magic_frozen(const char *s, size_t n)
{
    int frozen = -1;
    size_t pos = 0;
    while (pos + 3 <= n && memcmp(s + pos, "<%#", 3) == 0) {
        size_t eol = pos + 3;
        while (eol < n && s[eol] != '\n') eol++;
        size_t close = (size_t)-1;
        for (size_t k = pos + 3; k + 2 <= eol; k++)
            if (s[k] == '%' && s[k + 1] == '>') close = k;
        if (close == (size_t)-1) break;
        const char *cm = s + pos + 3;
        size_t cn = close - (pos + 3);
        /* -*- inner -*- at the end of the comment */
        if (cn >= 6 && memcmp(cm + cn - 3, "-*-", 3) == 0) {
            const char *o = NULL;
            for (size_t k = 0; k + 3 <= cn - 3; k++)
                if (memcmp(cm + k, "-*-", 3) == 0) { o = cm + k + 3; break; }
            if (o) {
                const char *e = cm + cn - 3;
                while (o < e && (*o == ' ' || *o == '\t')) o++;
                while (e > o && (e[-1] == ' ' || e[-1] == '\t')) e--;
                if (e > o) { cm = o; cn = (size_t)(e - o); }
            }
        }
        bool coding = false;
        for (size_t k = 0; k + 6 <= cn && !coding; k++) {
            if (memcmp(cm + k, "coding", 6) != 0) continue;
            size_t q = k + 6;
            while (q < cn && (cm[q] == ' ' || cm[q] == '\t')) q++;
            if (q < cn && (cm[q] == '=' || cm[q] == ':')) {
                q++;
                while (q < cn && (cm[q] == ' ' || cm[q] == '\t')) q++;
                coding = q < cn && (ident_char((unsigned char)cm[q]) || cm[q] == '-');
            }
        }
        if (!coding) {
            for (size_t k = 0; k + 21 <= cn; k++) {
                static const char fsl[] = "frozen_string_literal";
                bool m = true;
                for (size_t j = 0; j < 21 && m; j++)
                    m = cm[k + j] == fsl[j] || (fsl[j] == '_' && cm[k + j] == '-');
                if (!m) continue;
                size_t q = k + 21;
                while (q < cn && (cm[q] == ' ' || cm[q] == '\t')) q++;
                if (q >= cn || cm[q] != ':') continue;
                q++;
                while (q < cn && (cm[q] == ' ' || cm[q] == '\t')) q++;
                size_t vs = q;
                while (q < cn && ident_char((unsigned char)cm[q]) && cm[q] != '_') q++;
                if (q == vs) continue;
                frozen = q - vs == 4 && (cm[vs] | 32) == 't' && (cm[vs + 1] | 32) == 'r' && (cm[vs + 2] | 32) == 'u' &&
                         (cm[vs + 3] | 32) == 'e';
                break;
            }
        }
        pos = close + 2;
    }
    return frozen;
}

int64_t tpl_erb_line(tpl_pctx *c, tpl_token t)
{
    erb_state *es = state_of(c);
    if (!es || !es->orig) return 0;
    uint32_t off = t.off < es->sc.n ? sc_src(&es->sc, t.off) : (uint32_t)es->norig;
    /* Ruby 3.1's ERB drops a <%# comment %>'s text from the script, line ends and all: a line after
     * a multi-line comment tag is that many lines less (<%% is text, %%> does not end a tag). */
    int64_t line = 1 + es->line_shift;
    const char *s = es->orig;
    int tag = 0; /* 0 text, 1 code tag, 2 comment tag */
    for (uint32_t i = 0; i < off && i < es->norig; i++) {
        size_t left = es->norig - i;
        if (!tag && left >= 3 && s[i] == '<' && s[i + 1] == '%' && s[i + 2] == '%') { i += 2; continue; }
        if (!tag && left >= 2 && s[i] == '<' && s[i + 1] == '%') { tag = left >= 3 && s[i + 2] == '#' ? 2 : 1; i++; continue; }
        if (tag && left >= 3 && s[i] == '%' && s[i + 1] == '%' && s[i + 2] == '>') { i += 2; continue; }
        if (tag && left >= 2 && s[i] == '%' && s[i + 1] == '>') { tag = 0; i++; continue; }
        line += s[i] == '\n' && tag != 2;
    }
    return line;
}

int tpl_erb_frozen(const char *src, size_t n) { return magic_frozen(src, n); }

/* A streaming parse's tpl_pctx.top in between: each top-level statement's offsets become source
 * offsets before it goes on to the compiler's top (stream_top, stream_data). */
typedef struct erb_stream {
    erb_state *es;
    void (*top)(void *data, tpl_node *node);
    void *data;
} erb_stream;

static void erb_top(void *data, tpl_node *node)
{
    erb_stream *st = data;
    node->next = NULL;
    map_offsets(&st->es->sc, node, 0, false);
    map_offsets(&st->es->sc, node, 0, true);
    st->top(st->data, node);
}

bool tpl_erb_parse(tpl_pctx *c)
{
    const char *src = c->src;
    size_t n = c->n;
    erb_state es = { 0 };
    es.orig = src;
    es.norig = n;
    int frozen = magic_frozen(src, n);
    es.line_shift = frozen >= 0;
    uint32_t eoff = 0;
    char msg[160];
    /* a streaming parse (c->top) resets c->arena after each statement: the script and its texts
     * go to c->keep */
    tpl_arena *keep = c->top && c->keep ? c->keep : c->arena;
    if (!erb_build_script(src, n, &es.sc, &eoff, msg, sizeof msg)) {
        if (es.sc.oom) tpl_pctx_nomem(c, eoff);
        else tpl_pctx_error(c, eoff, "%s", msg);
        sc_free(&es.sc);
        return false;
    }
    /* names and literals point into the script: it lives in the AST's arena */
    char *script = tpl_arena_strdup(keep, es.sc.s, es.sc.n);
    if (!script) {
        /* past the compile's memory limit: located where the script passes it (the budget's
         * room left, as a script offset mapped back to the source), not at the start */
        const tpl_budget *b = keep->budget;
        uint32_t at = 0;
        if (b && b->over && es.sc.n) {
            size_t room = b->limit > b->used ? b->limit - b->used : 0;
            at = sc_src(&es.sc, room < es.sc.n ? room : es.sc.n - 1);
        }
        tpl_pctx_nomem(c, at);
        sc_free(&es.sc);
        return false;
    }
    free(es.sc.s); /* (the arena's copy is the script from here on) */
    es.sc.s = NULL;
    c->src = script;
    c->n = es.sc.n;
    c->front = &es;
    erb_stream stream = { &es, c->top, c->top_data };
    if (c->top) {
        c->top = erb_top;
        c->top_data = &stream;
    }
    tpl_node *body = NULL;
    bool ok = parse_range(c, 0, es.sc.n, &body, true);
    if (stream.top) {
        c->top = stream.top;
        c->top_data = stream.data;
    }
    uint32_t err = c->err_off;
    if (c->failed) err = err < es.sc.n ? sc_src(&es.sc, err) : (uint32_t)n;
    if (ok) {
        tpl_node *t = tpl_p_node(c, TPL_N_TEMPLATE, 0, NULL, NULL);
        t->op = frozen == 1;   /* frozen_string_literal: true (string literals are frozen) */
        t->b = body->kind == TPL_N_RSTMTS ? body->b : body;
        if (!stream.top) {
            map_offsets(&es.sc, t->b, 0, false);
            map_offsets(&es.sc, t->b, 0, true);
        }
        c->root = t;
        c->src = src;
        c->n = n;
        ok = tpl_p_check_depth(c, t);
        err = c->err_off;
    }
    c->src = src;
    c->n = n;
    c->front = NULL;
    c->err_off = err;
    sc_free(&es.sc);
    return ok && !c->failed;
}

bool tpl_erb_tokens(tpl_pctx *c, tpl_erb_token_fn fn, void *data)
{
    const char *src = c->src;
    size_t n = c->n;
    erb_state es = { 0 };
    es.orig = src;
    es.norig = n;
    uint32_t eoff = 0;
    char msg[160];
    bool ok = erb_build_script(src, n, &es.sc, &eoff, msg, sizeof msg);
    if (!ok) {
        if (es.sc.oom) tpl_pctx_nomem(c, eoff);
        else tpl_pctx_error(c, eoff, "%s", msg);
    }
    tpl_token_vec toks = { 0 };
    if (ok) {
        rlex L = { 0 };
        L.ctx = c;
        L.s = es.sc.s;
        L.n = es.sc.n;
        L.out = &toks;
        c->src = es.sc.s;
        c->n = es.sc.n;
        c->front = &es;
        ok = ruby_lex(&L) && !c->failed;
        c->src = src;
        c->n = n;
        c->front = NULL;
        if (c->failed) c->err_off = c->err_off < es.sc.n ? sc_src(&es.sc, c->err_off) : (uint32_t)n;
    }
    for (size_t i = 0; ok && i < toks.n; i++) {
        tpl_token t = toks.v[i];
        const char *text = es.sc.s + t.off;
        size_t len = t.len;
        uint32_t off = t.off < es.sc.n ? sc_src(&es.sc, t.off) : (uint32_t)n;
        uint32_t end = t.len && t.off + t.len - 1 < es.sc.n ? sc_src(&es.sc, t.off + t.len - 1) + 1 : off;
        if (t.kind == TK_PUT) {   /* a text's marker: the text itself */
            tpl_value v = erb_put_text(&es, c->arena, es.sc.s, t, &off, &end);
            text = v.u.s;
            len = v.len;
        } else if (t.kind == TK_INS_OPEN) {
            text = "<%=", len = 3;
        } else if (t.kind == TK_INS_CLOSE) {
            text = "%>", len = 2;
        }
        fn(data, t.kind, off, end < off ? off : end, text, len);
    }
    free(toks.v);
    sc_free(&es.sc);
    return ok;
}

/* ------------------------------------------------------------------ literals for the actions */

tpl_node *tpl_erb_text(tpl_pctx *c, tpl_token t)
{
    erb_state *es = state_of(c);
    tpl_node *n = tpl_p_node(c, TPL_N_TEXT, t.off, NULL, NULL);
    uint32_t off, end;
    if (!es) return n;
    n->val = erb_put_text(es, c->arena, c->src, t, &off, &end);
    if (!n->val.u.s) tpl_pctx_nomem(c, t.off);
    return n;
}

/* The opening of a string token: 1 for '...' and "...", 2 for %(...), 3 for %q(...) and %Q(...). */
static size_t pct_prefix(const tpl_pctx *c, tpl_token t)
{
    if (c->src[t.off] != '%') return 1;
    return c->src[t.off + 1] == 'q' || c->src[t.off + 1] == 'Q' ? 3 : 2;
}

/* A <<~ heredoc's indentation, which Ruby removes from each line (parse.y update_heredoc_indent): the least
 * column (a tab counts to the next multiple of 8) at which a line holds more than blanks; SIZE_MAX (every
 * line's blanks removed) when none does. expand (<<~ID, <<~"ID"): Ruby's lexer counts on from a line of
 * blanks only into the next line (its count restarts only after a line holding more than blanks), so
 * "  \n  x" is indented 4; <<~'ID' restarts at each line. */
static size_t hd_width(const char *s, size_t len, bool expand)
{
    size_t w = (size_t)-1, i = 0, col = 0;
    while (i < len) {
        size_t k = i;
        if (!expand) col = 0;
        while (k < len && (s[k] == ' ' || s[k] == '\t')) { col = s[k] == '\t' ? (col / 8 + 1) * 8 : col + 1; k++; }
        if (k < len && s[k] != '\n' && !(s[k] == '\r' && k + 1 < len && s[k + 1] == '\n')) {
            if (col < w) w = col;
            col = 0;
        }
        while (k < len && s[k] != '\n') k++;
        i = k + 1;
    }
    return w;
}

/* s[0..len) appended to b without up to `width` columns of indentation at each line's start
 * (line_start: s[0] starts a line), as Ruby's dedent of a <<~ heredoc. */
static void hd_dedent(tpl_sb *b, const char *s, size_t len, size_t width, bool line_start)
{
    for (size_t i = 0; i < len;) {
        if (line_start) {
            size_t col = 0;
            while (i < len && col < width) {
                if (s[i] == ' ') col++;
                else if (s[i] == '\t') { size_t nc = (col / 8 + 1) * 8; if (nc > width) break; col = nc; }
                else break;
                i++;
            }
            line_start = false;
            continue;
        }
        if (!(s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')) tpl_sb_putc(b, s[i]);   /* CRLF: LF */
        if (s[i] == '\n') line_start = true;
        i++;
    }
}

tpl_node *tpl_erb_sstring(tpl_pctx *c, tpl_token t)
{
    tpl_node *n = tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
    if (t.flag == 'c') {   /* ?a, ?\n: a character literal (the lexer checked it) */
        const char *s = c->src + t.off + 1;
        if (s[0] == '\\') {
            static const char from[] = "ntsr0eabfv", to[] = "\n\t \r\0\033\a\b\f\v";
            const char *f = strchr(from, s[1]);
            char *o = tpl_arena_alloc(c->arena, 2);
            if (!o) { tpl_pctx_nomem(c, t.off); return n; }
            o[0] = f ? to[f - from] : s[1];
            o[1] = 0;
            n->val = tpl_v_str(o, 1);
            return n;
        }
        char *o = tpl_arena_strdup(c->arena, s, t.len - 1);
        if (!o) { tpl_pctx_nomem(c, t.off); return n; }
        n->val = tpl_v_str(o, t.len - 1);
        return n;
    }
    if (t.flag == 'h' || t.flag == '~') {   /* <<'ID' / <<~'ID': the body as it is (no escapes) */
        const char *s = c->src + t.off + 1;
        size_t len = t.len - 2;
        tpl_sb b;
        tpl_sb_init(&b, c->arena);
        hd_dedent(&b, s, len, t.flag == '~' ? hd_width(s, len, false) : 0, true);
        if (b.failed) { tpl_pctx_nomem(c, t.off); return n; }
        char *cp = tpl_arena_strdup(c->arena, b.p ? b.p : "", b.len);
        if (!cp) { tpl_pctx_nomem(c, t.off); return n; }
        n->val = tpl_v_str(cp, b.len);
        return n;
    }
    size_t pre = pct_prefix(c, t);   /* 'x' or %q(x) */
    const char *s = c->src + t.off + pre;
    size_t len = t.len - pre - 1;
    char q0 = c->src[t.off + pre - 1], q1 = c->src[t.off + t.len - 1];
    char *o = tpl_arena_alloc(c->arena, len + 1);
    if (!o) { tpl_pctx_nomem(c, t.off); return n; }
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len && (s[i + 1] == '\\' || s[i + 1] == q0 || s[i + 1] == q1)) i++;
        else if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n') continue;   /* CRLF: LF, as Ruby reads it */
        o[k++] = s[i];
    }
    o[k] = 0;
    n->val = tpl_v_str(o, k);
    return n;
}

/* Ruby double-quoted escapes of s[0..len) appended to b; false (with *bad, and *why when it is
 * not just an invalid escape) on a bad one. */
static bool dq_unescape(tpl_sb *b, const char *s, size_t len, size_t *bad, const char **why)
{
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == '\r' && i + 1 < len && s[i + 1] == '\n') continue;   /* Ruby reads a CRLF line break as LF */
        if (ch != '\\' || i + 1 >= len) { tpl_sb_putc(b, ch); continue; }
        char e = s[++i];
        switch (e) {
        case 'n': tpl_sb_putc(b, '\n'); break;
        case 't': tpl_sb_putc(b, '\t'); break;
        case 'r': tpl_sb_putc(b, '\r'); break;
        case 'e': tpl_sb_putc(b, 0x1b); break;
        case 's': tpl_sb_putc(b, ' '); break;
        case 'x': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            /* \xH[H] and \O[O[O]]: a byte; only ASCII ones (the literal stays UTF-8) */
            unsigned v = 0, nd = 0, base = e == 'x' ? 16 : 8;
            size_t k = e == 'x' ? i + 1 : i;
            while (k < len && nd < (e == 'x' ? 2u : 3u)) {
                char h = s[k];
                int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99;
                if (d >= (int)base) break;
                v = v * base + (unsigned)d;
                nd++;
                k++;
            }
            if (nd == 0 || v >= 0x80) {
                *bad = i;
                if (nd == 0 && e == 'x') *why = "invalid hex escape";
                else if (v >= 0x80) *why = "escapes of non-ASCII bytes are not supported (write the character itself)";
                return false;
            }
            tpl_sb_putc(b, (char)v);
            i = k - 1;
            break;
        }
        case 'a': tpl_sb_putc(b, 7); break;
        case 'b': tpl_sb_putc(b, 8); break;
        case 'f': tpl_sb_putc(b, 12); break;
        case 'v': tpl_sb_putc(b, 11); break;
        case '\n': break;
        case 'u': {
            uint32_t cp = 0;
            size_t k = i + 1;
            if (k < len && s[k] == '{') {
                /* \u{X} and \u{X Y ...} (code points apart by spaces); a surrogate, a code point past
                 * U+10FFFF or more than 6 digits is Ruby's "invalid Unicode" SyntaxError */
                k++;
                int nd = 0;
                for (;; k++) {
                    char h = k < len ? s[k] : 0;
                    if (h == ' ' || h == '\t' || h == '}') {
                        if (nd) {
                            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) { *bad = i; *why = "invalid Unicode codepoint"; return false; }
                            tpl_sb_put_cp(b, cp);
                        }
                        cp = 0;
                        nd = 0;
                        if (h == '}') break;
                        continue;
                    }
                    int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (v < 0 || ++nd > 6) { *bad = i; *why = "invalid Unicode escape"; return false; }
                    cp = cp * 16 + (uint32_t)v;
                }
                i = k;   /* (\u{} is empty) */
                break;
            } else {
                for (int d = 0; d < 4; d++, k++) {
                    char h = k < len ? s[k] : 0;
                    int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (v < 0) { *bad = i; return false; }
                    cp = cp * 16 + (uint32_t)v;
                }
                i = k - 1;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) { *bad = i; *why = "invalid Unicode codepoint"; return false; }
            tpl_sb_put_cp(b, cp);
            break;
        }
        default: tpl_sb_putc(b, e); break;
        }
    }
    return true;
}

/* Ruby's "#@ivar", "#@@cvar" and "#$gvar" interpolation (no braces): the length of the variable
 * name at s[p] ('@' or '$'), 0 when what follows is no variable (the '#' is then a literal one). */
static size_t dvar_len(const char *s, size_t len, size_t p)
{
    size_t k = p + 1;
    if (k >= len) return 0;
    unsigned char ch = (unsigned char)s[k];
    if (s[p] == '$') {
        if (ch == '-') {
            if (++k >= len) return 0;
            ch = (unsigned char)s[k];
            return ch >= 0x80 || ch == '_' || isalnum(ch) ? k + 1 - p : 0;
        }
        if (isdigit(ch)) {
            while (k < len && isdigit((unsigned char)s[k])) k++;
            return k - p;
        }
        if (ch && strchr("~*$?!@/\\;,.=:<>\"&`'+", ch)) return k + 1 - p;
    } else if (s[p] == '@') {
        if (ch == '@') {
            if (++k >= len) return 0;
            ch = (unsigned char)s[k];
        }
    } else {
        return 0;
    }
    if (!(ch >= 0x80 || ch == '_' || isalpha(ch))) return 0;
    while (k < len && ((unsigned char)s[k] >= 0x80 || s[k] == '_' || isalnum((unsigned char)s[k]))) k++;
    return k - p;
}

tpl_node *tpl_erb_dstring(tpl_pctx *c, tpl_token t)
{
    uint32_t pre = (uint32_t)pct_prefix(c, t);   /* "x" or %(x) / %Q(x) */
    const char *s = c->src + t.off + pre;
    size_t len = t.len - pre - 1, i = 0, lit = 0;
    tpl_node *parts = NULL;
    bool interp = false;
    tpl_sb b, hd;
    tpl_sb_init(&b, c->arena);
    tpl_sb_init(&hd, c->arena);
    size_t hdw = t.flag == '~' ? hd_width(s, len, true) : 0;   /* <<~ID: the indentation removed */
    while (i <= len) {
        if (i < len && s[i] == '\\') {   /* an escape: the next byte is never an interpolation's '#' */
            i = i + 2 < len ? i + 2 : len;
            continue;
        }
        size_t dv = i + 1 < len && s[i] == '#' && s[i + 1] != '{' ? dvar_len(s, len, i + 1) : 0;
        bool at_interp = i + 1 < len && s[i] == '#' && (s[i + 1] == '{' || dv);
        if (i == len || at_interp) {
            size_t bad = 0;
            const char *why = "invalid escape sequence in string literal";
            b.len = 0;
            const char *seg = s + lit;
            size_t segn = i - lit;
            if (hdw) {
                hd.len = 0;
                hd_dedent(&hd, seg, segn, hdw, lit == 0);
                if (hd.failed) { tpl_pctx_nomem(c, t.off); break; }
                seg = hd.p ? hd.p : "";
                segn = hd.len;
            }
            if (!dq_unescape(&b, seg, segn, &bad, &why)) {
                tpl_pctx_error(c, t.off + pre + (uint32_t)(lit + bad), "%s", why);
                return tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
            }
            if (b.failed) { tpl_pctx_nomem(c, t.off); break; }
            if (b.len) {
                tpl_node *k = tpl_p_node(c, TPL_N_CONST, t.off + pre + (uint32_t)lit, NULL, NULL);
                char *cp = tpl_arena_strdup(c->arena, b.p, b.len);
                k->val = tpl_v_str(cp ? cp : "", cp ? b.len : 0);
                parts = tpl_node_append(parts, k);
            }
            if (i == len) break;
            interp = true;
            if (dv) {
                /* #@ivar, #@@cvar, #$gvar: the variable alone */
                size_t from = (size_t)(s - c->src) + i + 1;
                tpl_node *code = NULL;
                if (!parse_range(c, from, from + dv, &code, false)) break;
                tpl_node *st = tpl_p_node(c, TPL_N_RSTMTS, (uint32_t)from, NULL, NULL);
                st->b = code && code->kind == TPL_N_RSTMTS ? code->b : code;
                parts = tpl_node_append(parts, st);
                i = i + 1 + dv;
                lit = i;
                continue;
            }
            /* #{ code } */
            size_t e = i + 2;
            int d = 1;
            while (e < len) {
                if (s[e] == '{') d++;
                else if (s[e] == '}') { if (--d == 0) break; }
                else if (s[e] == '$' && e + 1 < len) { e += 2; continue; }   /* $' and $`: no quote */
                else if (s[e] == '"' || s[e] == '\'') { e = skip_string(s, len, e, s[e]); if (e == (size_t)-1 || e == TOO_DEEP) break; continue; }
                e++;
            }
            if (e == TOO_DEEP) { tpl_pctx_error(c, t.off + pre + (uint32_t)i, "string interpolation nested more than 256 deep"); break; }
            if (e == (size_t)-1 || e >= len) { tpl_pctx_error(c, t.off + pre + (uint32_t)i, "unterminated #{} in string"); break; }
            size_t from = (size_t)(s - c->src) + i + 2, to = (size_t)(s - c->src) + e;
            tpl_node *code = NULL;
            if (!parse_range(c, from, to, &code, false)) break;
            tpl_node *st = tpl_p_node(c, TPL_N_RSTMTS, (uint32_t)from, NULL, NULL);
            st->b = code && code->kind == TPL_N_RSTMTS ? code->b : code;
            parts = tpl_node_append(parts, st);
            i = e + 1;
            lit = i;
            continue;
        }
        i++;
    }
    if (!interp) {
        if (parts) { parts->off = t.off; parts->next = NULL; parts->tail = NULL; return parts; }
        tpl_node *k = tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
        k->val = tpl_v_str("", 0);
        return k;
    }
    return tpl_p_node(c, TPL_N_INTERP, t.off, parts, NULL);
}

tpl_node *tpl_erb_symbol(tpl_pctx *c, tpl_token t)
{
    tpl_node *n;
    if (c->src[t.off + 1] == '"') {
        tpl_token q = t;
        q.off += 1;
        q.len -= 1;
        n = tpl_erb_dstring(c, q);
        if (n->kind != TPL_N_CONST) { tpl_pctx_error(c, t.off, "interpolated symbols are not supported"); return n; }
        n->off = t.off;
    } else {
        n = tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
        n->val = tpl_v_str(c->src + t.off + 1, t.len - 1);
    }
    n->val.flags |= TPL_F_SYMBOL;
    return n;
}

bool tpl_erb_regex_name(const char *re, size_t len, size_t *pos, size_t *start, size_t *nlen)
{
    bool cls = false;
    for (size_t i = *pos; i < len; i++) {
        if (re[i] == '\\') { i++; continue; }
        if (cls) { if (re[i] == ']') cls = false; continue; }
        if (re[i] == '[') { cls = true; continue; }
        if (re[i] != '(' || i + 3 >= len || re[i + 1] != '?' || (re[i + 2] != '<' && re[i + 2] != '\'')) continue;
        char close = re[i + 2] == '<' ? '>' : '\'';
        size_t b = i + 3, e = b;
        while (e < len && ident_char((unsigned char)re[e])) e++;
        if (e == b || e >= len || re[e] != close) continue;
        i = e;
        if (!((re[b] >= 'a' && re[b] <= 'z') || re[b] == '_' || (unsigned char)re[b] >= 0x80)) continue;
        *start = b;
        *nlen = e - b;
        *pos = e + 1;
        return true;
    }
    *pos = len;
    return false;
}

/* `/re/ =~ x` (a regex literal on the left): Ruby's lexer declares re's named groups as local variables */
static void regex_match_locals(rlex *L, const char *s, size_t n, size_t st, size_t e)
{
    size_t p = e;
    while (p < n && (s[p] == ' ' || s[p] == '\t')) p++;
    if (p + 1 >= n || s[p] != '=' || s[p + 1] != '~') return;
    size_t open = s[st] == '%' ? 3 : 1, end = e - 1;
    while (end > st && (s[end] == 'i' || s[end] == 'x' || s[end] == 'm')) end--;
    if (end <= st + open) return;
    const char *re = s + st + open;
    size_t len = end - (st + open), pos = 0, b, nl;
    while (tpl_erb_regex_name(re, len, &pos, &b, &nl)) add_local(L, re + b, nl);
}

tpl_node *tpl_erb_regex(tpl_pctx *c, tpl_token t)
{
    tpl_node *n = tpl_p_node(c, TPL_N_RREGEX, t.off, NULL, NULL);
    size_t e = t.len, open = c->src[t.off] == '%' ? 3 : 1;   /* /re/flags or %r{re}flags */
    uint16_t op = 0;
    for (char f; e > open && ((f = c->src[t.off + e - 1]) == 'i' || f == 'x' || f == 'm'); e--)
        op |= f == 'i' ? TPL_RX_I : f == 'x' ? TPL_RX_X : TPL_RX_M;
    n->val = tpl_v_str(c->src + t.off + open, e - open - 1);
    n->op = op;
    for (size_t i = 0; i + 1 < n->val.len; i++)
        if (n->val.u.s[i] == '\\') i++;
        else if (n->val.u.s[i] == '#' && (n->val.u.s[i + 1] == '{' || dvar_len(n->val.u.s, n->val.len, i + 1))) {
            tpl_pctx_error(c, t.off + (uint32_t)(open + i), "unsupported Ruby construct: interpolation (%s) in a regex literal",
                           n->val.u.s[i + 1] == '{' ? "#{}" : n->val.u.s[i + 1] == '@' ? "#@var" : "#$var");
            break;
        }
    return n;
}

tpl_node *tpl_erb_number(tpl_pctx *c, tpl_token t, bool is_float)
{
    if (t.len > 1 && c->src[t.off + t.len - 1] == 'r') {
        /* a Rational literal (3r, -0.75r, 1_000r): the call Rational("3"), which reads a decimal text
         * exactly as Ruby's literal does (0.75r is 3/4, not the Float 0.75's value) */
        size_t n = 0;
        char *txt = tpl_arena_alloc(c->arena, t.len);
        if (!txt) { tpl_pctx_nomem(c, t.off); return tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL); }
        for (uint32_t k = 0; k + 1 < t.len; k++)
            if (c->src[t.off + k] != '_' && c->src[t.off + k] != '+') txt[n++] = c->src[t.off + k];
        tpl_node *s = tpl_p_node(c, TPL_N_CONST, t.off, NULL, NULL);
        s->val = tpl_v_str(txt, n);
        tpl_node *call = tpl_p_node(c, TPL_N_RMETHOD, t.off, NULL, tpl_p_node(c, TPL_N_ARG, t.off, s, NULL));
        call->val = tpl_v_str("Rational", 8);
        return call;
    }
    bool neg = c->src[t.off] == '-', plus = c->src[t.off] == '+';
    tpl_token u = t;
    if (neg || plus) { u.off++; u.len--; }
    tpl_node *n = is_float ? tpl_p_float(c, u) : tpl_p_integer(c, u);
    n->off = t.off;
    if (neg) {
        if (is_float) {
            n->val.u.f = -n->val.u.f;
        } else if (n->val.type == TPL_T_INT) {
            n->val.u.i = -n->val.u.i;
        } else if (n->val.type == TPL_T_BIGINT) {
            /* past int64 (-9223372036854775808 is int64's smallest): negated as a big int, not
             * through u.i, which overlays the big int's text pointer (it crashed the compile) */
            mpz_t z;
            tpl_big_get(z, n->val);
            mpz_neg(z, z);
            if (!tpl_big_value(c->arena, z, &n->val)) tpl_pctx_nomem(c, t.off);
            mpz_clear(z);
            n->op = 0;
        }
    }
    return n;
}

tpl_node *tpl_erb_words(tpl_pctx *c, tpl_token t)
{
    /* Ruby's word lists: words split at unescaped blanks (space, tab, newline, CR, FF, VT). %w/%i: a backslash before a
     * blank, a backslash or a delimiter gives that byte, before anything else it stays; %W/%I: each word is a
     * double-quoted string's text (escapes and #{} interpolations, tpl_erb_dstring over the word's bytes). %i/%I: Symbols. */
    tpl_node *items = NULL;
    char kind = c->src[t.off + 1], open = c->src[t.off + 2], close = c->src[t.off + t.len - 1];
    bool sym = kind == 'i' || kind == 'I', interp = kind == 'W' || kind == 'I';
    size_t i = t.off + 3, e = t.off + t.len - 1;
#define WS(ch) ((ch) == ' ' || (ch) == '\t' || (ch) == '\n' || (ch) == '\r' || (ch) == '\f' || (ch) == '\v')
    while (i < e) {
        while (i < e && WS(c->src[i])) i++;
        if (i >= e) break;
        size_t st = i;
        tpl_sb b;
        tpl_sb_init(&b, c->arena);
        int d = 0;
        while (i < e && !WS(c->src[i])) {
            char ch = c->src[i];
            if (ch == '\\' && i + 1 < e) {
                char x = c->src[i + 1];
                if (!interp) {
                    if (!(WS(x) || x == '\\' || x == open || x == close)) tpl_sb_putc(&b, '\\');
                    tpl_sb_putc(&b, x);
                }
                i += 2;
                continue;
            }
            if (interp && ch == '#' && i + 1 < e && c->src[i + 1] == '{') {
                size_t k = skip_interp(c->src, e, i);
                i = k == (size_t)-1 || k == TOO_DEEP ? e : k;
                continue;
            }
            if (open != close && ch == open) d++;
            else if (open != close && ch == close) d--;
            if (!interp) tpl_sb_putc(&b, ch);
            i++;
        }
        (void)d;
        tpl_node *k;
        if (interp) {
            /* (the word's bytes with the byte before and after it as its quotes: neither is '%') */
            tpl_token w = { .off = (uint32_t)st - 1, .len = (uint32_t)(i - st) + 2 };
            w.kind = TK_DSTRING;
            k = tpl_erb_dstring(c, w);
            if (!k) return NULL;
            if (sym && k->kind != TPL_N_CONST) {
                tpl_node *m = tpl_p_node(c, TPL_N_RMETHOD, (uint32_t)st, k, NULL);
                m->val = tpl_v_str("to_sym", 6);
                k = m;
            }
        } else {
            if (b.failed) { tpl_pctx_nomem(c, t.off); return NULL; }
            k = tpl_p_node(c, TPL_N_CONST, (uint32_t)st, NULL, NULL);
            char *cp = tpl_arena_strdup(c->arena, b.p ? b.p : "", b.len);
            if (!cp) { tpl_pctx_nomem(c, t.off); return NULL; }
            k->val = tpl_v_str(cp, b.len);
        }
        if (sym && k->kind == TPL_N_CONST) k->val.flags |= TPL_F_SYMBOL;
        items = tpl_node_append(items, k);
    }
#undef WS
    return tpl_p_node(c, TPL_N_LIST, t.off, items, NULL);
}
