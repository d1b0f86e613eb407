/* host-agent: a host program that embeds the tpl VM and views precompiled at build time.
 *
 * The views in views/ are compiled by `tplc compile --emit c` when the program is built (see
 * meson.build: the README's recipe), so this binary parses no template at run time and ships
 * no template files. It keeps the call's state in its own structs, applies a scripted sequence
 * of state changes (a stage move, a patient found, slots arriving, a fact recalled into its own
 * memory store, which the views' remembers() asks through tpl_render_set_remembers) and
 * renders the two views as the dynamic blocks of a page (include/tpl_page.h) after each change:
 * the page re-renders a view only when a value it reads changed (the state names it reads, the
 * facts when it uses remembers) and says whether its text changed, and the host prints a view
 * only then — the way an agent re-sends a prompt block only when it changed.
 *
 *   host-agent [EXPECTED.txt]    with a file: also compare the whole output with it (exit 1 on
 *                                a difference), as the meson test does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tpl.h>
#include <tpl_page.h>

/* Generated from views/front_desk.jinja and views/summary.jinja at build time. */
extern const struct tpl_static_program front_desk;
extern const struct tpl_static_program summary;

/* ------------------------------------------------------------------ the host's own state */

typedef struct slot { const char *day, *time, *doctor; } slot;

typedef struct call_state {
    const char *stage;
    const char *patient_name;   /* NULL until the patient is found */
    const char *patient_doctor;
    slot slots[8];
    int nslots;
    int turns;                  /* the host's bookkeeping: not read by the views */
} call_state;

/* The host's memory store: what memory recalled during this call. The views' remembers(words)
 * asks it through tpl_render_set_remembers (tpl hands over the words NFC-normalised; the facts
 * here are ASCII, so a byte search is enough). */
typedef struct memory {
    const char *facts[8];
    int nfacts;
} memory;

static int memory_remembers(void *data, const char *words, size_t len)
{
    const memory *m = data;
    for (int i = 0; i < m->nfacts; i++) {
        size_t fl = strlen(m->facts[i]);
        for (size_t k = 0; len <= fl && k + len <= fl; k++)
            if (memcmp(m->facts[i] + k, words, len) == 0) return 1;
    }
    return 0;
}

/* A growable output buffer (stdout text, kept for the comparison). */
typedef struct buf { char *p; size_t len, cap; } buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->len + n + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) { perror("realloc"); exit(2); }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
static void puts_b(buf *b, const char *s) { put(b, s, strlen(s)); }

static void json_str(buf *b, const char *s)
{
    if (!s) { puts_b(b, "null"); return; }
    puts_b(b, "\"");
    for (; *s; s++) {
        char esc[8];
        if (*s == '"' || *s == '\\') { esc[0] = '\\'; esc[1] = *s; put(b, esc, 2); }
        else if ((unsigned char)*s < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", (unsigned char)*s); puts_b(b, esc); }
        else put(b, s, 1);
    }
    puts_b(b, "\"");
}

/* The state as the views see it (JSON object). */
static void state_json(const call_state *st, buf *b)
{
    b->len = 0;
    puts_b(b, "{\"clinic\": {\"name\": \"Clínica Sant Joan\"}, \"today\": \"Monday 30 November\", \"stage\": ");
    json_str(b, st->stage);
    puts_b(b, ", \"patient\": ");
    if (st->patient_name) {
        puts_b(b, "{\"name\": ");
        json_str(b, st->patient_name);
        if (st->patient_doctor) { puts_b(b, ", \"doctor\": "); json_str(b, st->patient_doctor); }
        puts_b(b, "}");
    } else {
        puts_b(b, "null");
    }
    puts_b(b, ", \"slots\": [");
    for (int i = 0; i < st->nslots; i++) {
        puts_b(b, i ? ", {\"day\": " : "{\"day\": ");
        json_str(b, st->slots[i].day);
        puts_b(b, ", \"time\": ");
        json_str(b, st->slots[i].time);
        if (st->slots[i].doctor) { puts_b(b, ", \"doctor\": "); json_str(b, st->slots[i].doctor); }
        puts_b(b, "}");
    }
    char turns[64];
    snprintf(turns, sizeof turns, "], \"turns\": %d}", st->turns);
    puts_b(b, turns);
}

/* ------------------------------------------------------------------ the page */

/* Appends block i of the call to out: its text when it changed (what an agent re-sends), else
 * a line saying it was not re-sent, and whether it was even re-rendered. */
static void show_block(const tpl_page_call *call, size_t i, buf *out)
{
    tpl_page_block_result b;
    if (tpl_page_call_block(call, i, &b) != TPL_OK) return;
    puts_b(out, "  [");
    puts_b(out, b.name);
    if (!b.changed) {
        puts_b(out, b.rendered ? ": unchanged, not re-sent]\n" : ": nothing it reads changed, not re-rendered]\n");
        return;
    }
    puts_b(out, "]\n");
    put(out, b.text, b.len);
    if (b.len && b.text[b.len - 1] != '\n') puts_b(out, "\n");
}

int main(int argc, char **argv)
{
    /* the page: two dynamic blocks from the precompiled views (the page layer keeps their texts
     * and re-renders a block only when a value it reads changed) */
    const struct tpl_static_program *progs[2] = { &front_desk, &summary };
    const char *names[2] = { "prompt", "summary" };
    tpl_program *views[2] = { NULL, NULL };
    tpl_page_block_def defs[2];
    for (int i = 0; i < 2; i++) {
        tpl_error err = { 0 };
        if (tpl_program_load_static(progs[i], &views[i], &err) != TPL_OK) {
            fprintf(stderr, "%s: %s\n", err.file ? err.file : "view", err.message ? err.message : "invalid");
            tpl_error_clear(&err);
            return 2;
        }
        defs[i] = (tpl_page_block_def){ names[i], TPL_PAGE_DYNAMIC, NULL, NULL, 0, views[i] };
    }
    tpl_page *page = NULL;
    tpl_error err = { 0 };
    if (tpl_page_new(defs, 2, NULL, NULL, 0, NULL, NULL, &page, &err) != TPL_OK) {
        char *msg = tpl_error_format(&err);
        fprintf(stderr, "%s", msg ? msg : "page failed\n");
        free(msg);
        tpl_error_clear(&err);
        return 2;
    }
    tpl_limits limits = { .fuel = 1000000, .max_output = 1 << 20 };
    tpl_render *r = tpl_render_new(&limits);
    tpl_page_call *call = r ? tpl_page_call_new(page, r) : NULL;
    if (!call) return 2;
    tpl_page_call_set_channel(call, "phone", NULL);
    memory mem = { { NULL }, 0 };
    tpl_render_set_remembers(r, memory_remembers, &mem);

    call_state st = { .stage = "identify" };
    buf json = { 0 }, out = { 0 };
    int rc = 0;
    for (int step = 0; step < 8 && rc == 0; step++) {
        const char *what = "";
        switch (step) {
        case 0: what = "call starts"; break;
        case 1: what = "caller says hello (only the host's turn counter changes)"; st.turns++; break;
        case 2: what = "patient found"; st.patient_name = "Marta Puig"; st.patient_doctor = "Dr. Vidal"; st.turns++; break;
        case 3: what = "stage moves to schedule"; st.stage = "schedule"; break;
        case 4:
            what = "free slots arrive";
            st.slots[0] = (slot){ "Tuesday", "10:30", "Dr. Vidal" };
            st.slots[1] = (slot){ "Wednesday", "9:00", NULL };
            st.slots[2] = (slot){ "Friday", "16:15", "Dr. Serra" };
            st.nslots = 3;
            break;
        case 5:
            what = "memory recalls a fact";
            mem.facts[mem.nfacts++] = "The patient's usual doctor is Dr. Vidal";
            tpl_page_call_facts_changed(call); /* the store behind remembers() changed */
            break;
        case 6: what = "stage moves to confirm"; st.stage = "confirm"; st.turns++; break;
        default: what = "nothing changed"; break;
        }
        puts_b(&out, "== ");
        puts_b(&out, what);
        puts_b(&out, "\n");
        state_json(&st, &json);
        if (tpl_page_call_render(call, json.p, json.len) != TPL_OK) {
            char *msg = tpl_error_format(tpl_page_call_error(call));
            fprintf(stderr, "%s", msg ? msg : "render failed\n");
            free(msg);
            rc = 1;
            break;
        }
        for (size_t i = 0; i < tpl_page_block_count(page); i++) show_block(call, i, &out);
    }
    if (out.len) fwrite(out.p, 1, out.len, stdout);
    if (rc == 0 && argc > 1) {
        FILE *f = fopen(argv[1], "rb");
        buf want = { 0 };
        char chunk[4096];
        size_t got;
        while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0) put(&want, chunk, got);
        if (f) fclose(f);
        if (!f || want.len != out.len || memcmp(want.p, out.p, out.len) != 0) {
            fprintf(stderr, "host-agent: output differs from %s\n", argv[1]);
            rc = 1;
        }
        free(want.p);
    }
    tpl_page_call_free(call);
    tpl_page_free(page);
    for (int i = 0; i < 2; i++) tpl_program_free(views[i]);
    tpl_render_free(r);
    free(json.p);
    free(out.p);
    return rc;
}
