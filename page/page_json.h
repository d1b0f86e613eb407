/* JSON text helpers of the page layer (page/page_json.c): the top-level entries of a state
 * object as raw text (the incremental render compares values as text), and a small tree of
 * offsets over page.json (its errors are located at the key or value they are about). */
#ifndef TPL_PAGE_JSON_H
#define TPL_PAGE_JSON_H

#include <stddef.h>

/* One top-level entry: the key as written between its quotes (no escapes) and the value's
 * JSON text; both point into the scanned text. */
typedef struct pj_entry {
    const char *key;
    size_t klen;
    const char *val;
    size_t vlen;
} pj_entry;

/* Scans s[0..n) as one JSON object into *ents (grown with realloc; *cap its capacity) and
 * *nents. Returns 1 when s is a JSON object tpl's state parser surely accepts as the same
 * entries (strict RFC 8259 with UTF-8, integers of at most 18 digits, floats of at most 17
 * significant digits and small exponents, no \u0000 or surrogate escapes, unique keys without
 * escapes, nesting at most 64 deep); 0 when it is not (invalid, or something the scanner
 * leaves to the real parser); -1 when out of memory. */
int pj_scan_object(const char *s, size_t n, pj_entry **ents, size_t *nents, size_t *cap);

/* Offsets of a JSON text jansson accepted: objects and arrays to depth 3. */
typedef struct pj_node {
    size_t off;              /* the value's first byte */
    size_t koff;             /* its key's opening quote (a member of an object) */
    const char *key;         /* the key as written (points into the text), NULL in an array */
    size_t klen;
    struct pj_node *kids;
    size_t nkids;
} pj_node;

pj_node *pj_tree(const char *s, size_t n);
void pj_tree_free(pj_node *t);
/* Where member `key` of object node obj is (its key / its value); obj's own offset when it has
 * no such member, 0 when obj is NULL. */
size_t pj_key_off(const pj_node *obj, const char *key);
size_t pj_val_off(const pj_node *obj, const char *key);
const pj_node *pj_child(const pj_node *obj, const char *key);
const pj_node *pj_index(const pj_node *arr, size_t i);

#endif
