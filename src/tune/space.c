/*
 * The search space of the tuner (tune.h, "the space"): the knobs of a base
 * schedule text and the text of any setting of them.
 *
 * The base is the automatic schedule's trace, so every candidate keeps its
 * structure (what is inlined, what is computed where, which loops are
 * parallel) and varies what the scheduler had to guess:
 *   - every integer of a split, split_nparts or tile line: tile sizes,
 *     vector widths, unroll depths, the grain of parallel loops. Values come
 *     from FACTORS (a mutation moves one or two steps along it);
 *   - every unroll and vectorize_reduce line may be left out;
 *   - every reorder line's order: a bit per adjacent pair, swapped left to
 *     right.
 * A setting that makes a line illegal (a factor above an extent that a
 * later line needs, say) is refused when its text is applied; the search
 * then simply discards it.
 */
#include "tune/tune.h"

#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int FACTORS[] = {1,   2,   3,   4,   5,   6,   7,   8,   10,  12,   14,   16,
                              20,  24,  28,  32,  40,  48,  56,  64,  80,  96,   112,  128,
                              160, 192, 224, 256, 320, 384, 448, 512, 768, 1024, 1536, 2048};
enum { N_FACTORS = sizeof FACTORS / sizeof FACTORS[0] };

uint64_t texi_tune_rand(uint64_t *rng)
{
    uint64_t z = (*rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static void add_knob(texi_tune_space *s, enum texi_knob_kind kind, int line, int word, int base)
{
    if (s->n_knobs < TEXI_TUNE_MAX_KNOBS)
        s->knobs[s->n_knobs++] = (texi_knob){kind, line, word, base};
}

/* The knobs of line l (its words already split). */
static void line_knobs(texi_tune_space *s, int l)
{
    char **w = s->words[l];
    int n = s->n_words[l];
    bool split = strcmp(w[0], "split") == 0 || strcmp(w[0], "split_nparts") == 0;
    if ((split && n >= 4) || (strcmp(w[0], "tile") == 0 && n == 6)) {
        for (int k = split ? 3 : 4; k < (split ? 4 : 6); k++) {
            long v = strtol(w[k], NULL, 10);
            if (v > 0 && v <= 1 << 20)
                add_knob(s, TEXI_KNOB_FACTOR, l, k, (int)v);
        }
    } else if (strcmp(w[0], "unroll") == 0 || strcmp(w[0], "vectorize_reduce") == 0) {
        add_knob(s, TEXI_KNOB_TOGGLE, l, 0, 1);
    } else if (strcmp(w[0], "reorder") == 0 && n >= 4 && n - 3 <= 30) {
        add_knob(s, TEXI_KNOB_ORDER, l, 0, 0);
    }
}

int texi_tune_space_init(texi_tune_space *s, const char *base)
{
    memset(s, 0, sizeof *s);
    if (!(s->text = strdup(base)))
        return TEX_ENOMEM;
    for (char *line = s->text; line && *line && s->n_lines < TEXI_TUNE_MAX_LINES;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        int n = 0;
        for (char *q = line; *q && n < 72;) {
            while (*q == ' ' || *q == '\t')
                *q++ = '\0';
            if (*q)
                s->words[s->n_lines][n++] = q;
            while (*q && *q != ' ' && *q != '\t')
                q++;
        }
        if (n > 0 && s->words[s->n_lines][0][0] != ';') {
            s->n_words[s->n_lines] = n;
            line_knobs(s, s->n_lines++);
        }
        line = next;
    }
    return 0;
}

void texi_tune_space_free(texi_tune_space *s)
{
    free(s->text);
    memset(s, 0, sizeof *s);
}

void texi_tune_space_base(const texi_tune_space *s, texi_tune_point *p)
{
    memset(p, 0, sizeof *p);
    for (int k = 0; k < s->n_knobs; k++)
        p->v[k] = s->knobs[k].base;
}

bool texi_tune_point_equal(const texi_tune_space *s, const texi_tune_point *a,
                           const texi_tune_point *b)
{
    return memcmp(a->v, b->v, sizeof a->v[0] * (size_t)s->n_knobs) == 0;
}

/* Line l of setting p into sb (nothing when a toggle leaves it out). */
static void put_line(const texi_tune_space *s, const texi_tune_point *p, int l, texi_sb *sb)
{
    const char *w[72];
    char num[3][16];
    int n = s->n_words[l], n_num = 0;
    memcpy(w, s->words[l], sizeof w[0] * (size_t)n);
    for (int k = 0; k < s->n_knobs; k++) {
        const texi_knob *kb = &s->knobs[k];
        if (kb->line != l)
            continue;
        if (kb->kind == TEXI_KNOB_TOGGLE && !p->v[k])
            return;
        if (kb->kind == TEXI_KNOB_FACTOR && n_num < 3) {
            snprintf(num[n_num], sizeof num[0], "%d", p->v[k]);
            w[kb->word] = num[n_num++];
        }
        for (int i = 2; kb->kind == TEXI_KNOB_ORDER && i + 1 < n; i++)
            if (p->v[k] >> (i - 2) & 1) {
                const char *t = w[i];
                w[i] = w[i + 1];
                w[i + 1] = t;
            }
    }
    for (int i = 0; i < n; i++) {
        texi_sb_puts(sb, w[i]);
        texi_sb_putc(sb, i + 1 < n ? ' ' : '\n');
    }
}

char *texi_tune_space_text(const texi_tune_space *s, const texi_tune_point *p)
{
    texi_sb sb;
    texi_sb_init(&sb);
    for (int l = 0; l < s->n_lines; l++)
        put_line(s, p, l, &sb);
    return texi_sb_take(&sb);
}

/* The index in FACTORS closest to v. */
static int factor_index(int v)
{
    int best = 0;
    for (int i = 1; i < N_FACTORS; i++)
        if (abs(FACTORS[i] - v) < abs(FACTORS[best] - v))
            best = i;
    return best;
}

/* Changes knob k of p. */
static void mutate_knob(const texi_tune_space *s, int k, texi_tune_point *p, uint64_t *rng)
{
    uint64_t r = texi_tune_rand(rng);
    switch (s->knobs[k].kind) {
    case TEXI_KNOB_FACTOR: {
        int step = 1 + (int)((r >> 8) % 2); /* one or two places along FACTORS */
        int i = factor_index(p->v[k]) + (r % 2 ? step : -step);
        p->v[k] = FACTORS[i < 0 ? 0 : i >= N_FACTORS ? N_FACTORS - 1 : i];
        break;
    }
    case TEXI_KNOB_TOGGLE:
        p->v[k] = !p->v[k];
        break;
    case TEXI_KNOB_ORDER: {
        int pairs = s->n_words[s->knobs[k].line] - 3;
        p->v[k] ^= 1 << (int)(r % (uint64_t)pairs);
        break;
    }
    }
}

void texi_tune_space_mutate(const texi_tune_space *s, texi_tune_point *p, uint64_t *rng)
{
    if (s->n_knobs == 0)
        return;
    int changes = 1 + (int)(texi_tune_rand(rng) % 2);
    for (int c = 0; c < changes; c++)
        mutate_knob(s, (int)(texi_tune_rand(rng) % (uint64_t)s->n_knobs), p, rng);
}
