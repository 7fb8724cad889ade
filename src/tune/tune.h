/*
 * The measured tuner (tex_tune, docs/tuning.md), private to src/tune.
 *
 * A candidate is schedule text (docs/api.md, "Schedules as text"): the
 * automatic schedule's trace with its knobs changed. The workload's key and
 * the tuning log live below, in src/autosched (tuning_log.h), because
 * tex_auto_schedule reads the log too. One file per job here:
 *   workload.c  the workload's key (a hash of the computes), its kernel
 *               parameters, its arrays and the reference output
 *   space.c     the knobs of a schedule text and the text of a setting
 *   measure.c   building candidates (compiled in parallel) and timing them
 *   model.c     the cost model: ridge regression over the knob settings
 *   tune.c      tex_tune: the search
 */
#ifndef TEX_TUNE_TUNE_H
#define TEX_TUNE_TUNE_H

#include "autosched/tuning_log.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------------ workload */

#define TEXI_TUNE_MAX_PARAMS 32

/* What the tuner runs: the outputs' kernel with its parameters (the
 * placeholders reachable from the outputs, producers first, then the
 * outputs), arrays of their real shapes and the expected outputs. */
typedef struct {
    tex_ctx *ctx;
    int n_out;
    tex_tensor *const *outputs;
    char key[65]; /* texi_tune_key */
    int n_params; /* inputs, then outputs */
    tex_tensor *params[TEXI_TUNE_MAX_PARAMS];
    DLTensor *arrays[TEXI_TUNE_MAX_PARAMS]; /* parallel to params; host memory */
    DLTensor *run[TEXI_TUNE_MAX_PARAMS];    /* what kernels get: arrays, or device copies */
    bool on_device;                         /* a CUDA target: run holds device arrays */
    DLTensor *want[TEXI_TUNE_MAX_PARAMS];   /* the outputs' reference values */
    bool want_from_oracle;                  /* else from the first schedule's kernel */
    int sampled_points;                     /* elements of that kernel's outputs checked */
} texi_tune_workload;

/* Fills w for outputs (arrays allocated, inputs random; with on_device,
 * device copies of every array for kernels built for CUDA): 0, TEX_EINVAL
 * when a shape is symbolic or there are too many tensors (named),
 * TEX_ENOMEM, TEX_EDEVICE when device memory cannot be had. */
int texi_tune_workload_init(texi_tune_workload *w, tex_ctx *ctx, int n, tex_tensor *const outputs[],
                            bool on_device, const char *call);

/* Whether target builds kernels for the host CPU ("cpu ..."; "c"), whose C
 * sources can be compiled ahead into the kernel cache; otherwise (CUDA) the
 * kernels run on device copies of the arrays. */
bool texi_tune_target_is_cpu(const char *target);

/* Runs k on w's arrays (w->run) and leaves its outputs in w->arrays (copied
 * back from the device when on_device); with poison the outputs are first
 * filled with NaN bytes. 0 or k's error code (its message in
 * tex_kernel_errmsg), TEX_EDEVICE when a copy fails. */
int texi_tune_run(texi_tune_workload *w, tex_kernel *k, bool poison);
void texi_tune_workload_free(texi_tune_workload *w);

/* Whether out (the kernel's outputs in w->arrays) matches w->want. */
bool texi_tune_outputs_match(const texi_tune_workload *w, char *why, size_t cap);

/* Sets w->want: the oracle's values when evaluating them is cheap, else the
 * outputs of kernel k (the automatic schedule's). 0 or an error code. */
int texi_tune_reference(texi_tune_workload *w, tex_kernel *k);

/* ------------------------------------------------------------ the space */

#define TEXI_TUNE_MAX_KNOBS 48
#define TEXI_TUNE_MAX_LINES 128

enum texi_knob_kind {
    TEXI_KNOB_FACTOR, /* an integer argument of split / split_nparts / tile */
    TEXI_KNOB_TOGGLE, /* a line that may be left out (unroll, vectorize_reduce) */
    TEXI_KNOB_ORDER   /* a reorder line: which adjacent pairs are swapped */
};

typedef struct {
    enum texi_knob_kind kind;
    int line; /* the line it belongs to */
    int word; /* FACTOR: the word it replaces */
    int base; /* its value in the base text (FACTOR: the factor; TOGGLE: 1) */
} texi_knob;

/* A base schedule text split into words, and its knobs. */
typedef struct {
    int n_lines;
    int n_words[TEXI_TUNE_MAX_LINES];
    char *words[TEXI_TUNE_MAX_LINES][72]; /* into text */
    char *text;                           /* a malloc'ed copy, cut into words */
    int n_knobs;
    texi_knob knobs[TEXI_TUNE_MAX_KNOBS];
} texi_tune_space;

/* A setting of every knob (FACTOR: the value; TOGGLE: 0/1; ORDER: a bit
 * per adjacent pair to swap, applied left to right). */
typedef struct {
    int v[TEXI_TUNE_MAX_KNOBS];
} texi_tune_point;

/* Parses base (a schedule text) into s; 0 or TEX_ENOMEM. */
int texi_tune_space_init(texi_tune_space *s, const char *base);
void texi_tune_space_free(texi_tune_space *s);

/* The base text's own setting. */
void texi_tune_space_base(const texi_tune_space *s, texi_tune_point *p);

/* The schedule text of setting p (malloc'ed; NULL on ENOMEM). */
char *texi_tune_space_text(const texi_tune_space *s, const texi_tune_point *p);

/* Changes one or two knobs of p at random (rng: a splitmix64 state). */
void texi_tune_space_mutate(const texi_tune_space *s, texi_tune_point *p, uint64_t *rng);

/* Whether two settings are equal. */
bool texi_tune_point_equal(const texi_tune_space *s, const texi_tune_point *a,
                           const texi_tune_point *b);

uint64_t texi_tune_rand(uint64_t *rng);

/* ------------------------------------------------------------ the model */

#define TEXI_TUNE_MAX_FEATURES (2 * TEXI_TUNE_MAX_KNOBS + 1)

/* Ridge regression of log(time) on the features of a setting. */
typedef struct {
    int n_features;
    double w[TEXI_TUNE_MAX_FEATURES];
    double mean[TEXI_TUNE_MAX_FEATURES], scale[TEXI_TUNE_MAX_FEATURES];
    bool fitted;
} texi_tune_model;

/* The features of p: per FACTOR knob log2(value) and its square, per other
 * knob its value, then a constant 1. Returns their number. */
int texi_tune_features(const texi_tune_space *s, const texi_tune_point *p, double *x);

/* Fits the model to n rows x (n_features each) and targets y with ridge
 * penalty lambda; false when it cannot (n < 2, a singular system). */
bool texi_tune_model_fit(texi_tune_model *m, int n, int n_features, const double *x,
                         const double *y, double lambda);
double texi_tune_model_predict(const texi_tune_model *m, const double *x);

/* ------------------------------------------------------------ measuring */

/* One candidate: its text, its lowered function and, once built, its
 * kernel and median time. */
typedef struct {
    texi_tune_point point;
    char *text;
    tex_func *func;
    tex_kernel *kernel;
    double ms; /* median time; < 0 when it failed */
    char why[256];
} texi_tune_candidate;

/* Applies c->text to a fresh schedule of w's outputs and lowers it; false
 * (with c->why) when the text or the lowering is refused. The context's
 * error is cleared either way. */
bool texi_tune_lower(texi_tune_workload *w, texi_tune_candidate *c);

/* Builds the n candidates with a function for target: their sources are
 * compiled on up to `jobs` threads at once into the kernel cache, then
 * each is built (from the cache) one after the other. */
void texi_tune_build(tex_ctx *ctx, texi_tune_candidate *c, int n, const char *target, int jobs);

/* Compiles the sources of the candidates with a function into the kernel
 * cache on `threads` background threads, until texi_tune_compile_join,
 * which takes what is left on the calling thread and waits for the rest.
 * The sources are generated here, on the calling thread. NULL when out of
 * memory (joining NULL does nothing; the kernels compile when built). */
typedef struct texi_tune_compiles texi_tune_compiles;
texi_tune_compiles *texi_tune_compile_start(texi_tune_candidate *c, int n, const char *target,
                                            int threads);
void texi_tune_compile_join(texi_tune_compiles *h);

/* A monotonic clock, in milliseconds. */
double texi_tune_now_ms(void);

/* The median of ms[0 .. n) (n > 0; sorted in place). */
double texi_tune_median(double *ms, int n);

/* Runs c's kernel (warm-up, then a median of several runs), checking its
 * outputs; sets c->ms (< 0 with c->why on a failure). */
void texi_tune_time(texi_tune_workload *w, texi_tune_candidate *c, double budget_ms);

#endif
