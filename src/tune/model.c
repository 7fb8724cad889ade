/*
 * The tuner's cost model (tune.h, "the model"): ridge regression of
 * log(time) on the features of a knob setting, refitted after every batch
 * of measurements and used to rank mutants so that only the promising ones
 * are compiled and run.
 *
 * Features: per FACTOR knob log2(value) and its square (a tile size has an
 * optimum in the middle, which a line cannot express but a parabola can),
 * per TOGGLE / ORDER knob its value; then a constant. Every feature but the
 * constant is standardized over the rows (mean 0, standard deviation 1) and
 * the penalty lambda * |w|^2 spares the constant. The normal equations are
 * solved by Gaussian elimination with partial pivoting; a system that is
 * singular even with the penalty leaves the model unfitted.
 */
#include "tune/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int texi_tune_features(const texi_tune_space *s, const texi_tune_point *p, double *x)
{
    int n = 0;
    for (int k = 0; k < s->n_knobs; k++) {
        if (s->knobs[k].kind == TEXI_KNOB_FACTOR) {
            double l = log2((double)(p->v[k] > 0 ? p->v[k] : 1));
            x[n++] = l;
            x[n++] = l * l;
        } else {
            x[n++] = (double)p->v[k];
        }
    }
    x[n++] = 1.0;
    return n;
}

/* Solves a x = b (n x n, row-major, both overwritten); false when singular. */
static bool solve(int n, double *a, double *b, double *x)
{
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[piv * n + c]))
                piv = r;
        if (fabs(a[piv * n + c]) < 1e-12)
            return false;
        for (int k = 0; k < n; k++) {
            double t = a[c * n + k];
            a[c * n + k] = a[piv * n + k];
            a[piv * n + k] = t;
        }
        double t = b[c];
        b[c] = b[piv];
        b[piv] = t;
        for (int r = c + 1; r < n; r++) {
            double f = a[r * n + c] / a[c * n + c];
            for (int k = c; k < n; k++)
                a[r * n + k] -= f * a[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double sum = b[r];
        for (int k = r + 1; k < n; k++)
            sum -= a[r * n + k] * x[k];
        x[r] = sum / a[r * n + r];
    }
    return true;
}

bool texi_tune_model_fit(texi_tune_model *m, int n, int n_features, const double *x,
                         const double *y, double lambda)
{
    enum { F = TEXI_TUNE_MAX_FEATURES };
    m->fitted = false;
    if (n < 2 || n_features < 1 || n_features > F)
        return false;
    int nf = n_features, last = nf - 1; /* the constant */
    m->n_features = nf;
    for (int f = 0; f < nf; f++) {
        double mean = 0, var = 0;
        for (int r = 0; r < n; r++)
            mean += x[r * nf + f] / n;
        for (int r = 0; r < n; r++)
            var += (x[r * nf + f] - mean) * (x[r * nf + f] - mean) / n;
        m->mean[f] = f == last ? 0 : mean;
        m->scale[f] = f == last || var < 1e-18 ? 1 : 1 / sqrt(var);
    }
    double *a = calloc((size_t)(nf * nf), sizeof *a), b[F];
    if (!a)
        return false;
    memset(b, 0, sizeof b[0] * (size_t)nf);
    for (int r = 0; r < n; r++) {
        double z[F];
        for (int f = 0; f < nf; f++)
            z[f] = (x[r * nf + f] - m->mean[f]) * m->scale[f];
        for (int i = 0; i < nf; i++) {
            b[i] += z[i] * y[r];
            for (int j = 0; j < nf; j++)
                a[i * nf + j] += z[i] * z[j];
        }
    }
    for (int i = 0; i < last; i++)
        a[i * nf + i] += lambda;
    m->fitted = solve(nf, a, b, m->w);
    free(a);
    return m->fitted;
}

double texi_tune_model_predict(const texi_tune_model *m, const double *x)
{
    double p = 0;
    for (int f = 0; f < m->n_features; f++)
        p += m->w[f] * (x[f] - m->mean[f]) * m->scale[f];
    return p;
}
