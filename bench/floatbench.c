/* floatbench.c -- JSON float formatting speed on one core: tokvec's
 * shortest round-trip writer next to snprintf("%.9g") on the same values
 * (normal-distributed, like embeddings; and uniformly random bit patterns).
 * Prints floats/s for each and the ratio. Single-threaded.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokvec_float.h"

#define N (1 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile size_t sink;

static double rate(const float *v, int use_printf)
{
    static char buf[64];
    double best = 0;
    for (int round = 0; round < 3; round++) {
        double t0 = now();
        size_t total = 0;
        for (int i = 0; i < N; i++)
            total += use_printf ? (size_t)snprintf(buf, sizeof buf, "%.9g",
                                                   (double)v[i])
                                : tokvec_f32_format(v[i], buf);
        double r = N / (now() - t0);
        sink += total;
        if (r > best)
            best = r;
    }
    return best;
}

int main(void)
{
    float *normal = malloc(N * sizeof *normal), *bits = malloc(N * 4);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u1 = ((double)(x >> 11) + 1) * 0x1p-53;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u2 = (double)(x >> 11) * 0x1p-53;
        normal[i] = (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
        uint32_t b = (uint32_t)x;
        if ((b & 0x7f800000u) == 0x7f800000u)
            b &= 0xbfffffffu; /* keep it finite */
        memcpy(&bits[i], &b, 4);
    }
    const char *names[2] = {"normal(0,1)", "random bits"};
    float *sets[2] = {normal, bits};
    for (int s = 0; s < 2; s++) {
        double a = rate(sets[s], 0), b = rate(sets[s], 1);
        printf("json floats %-12s\ttokvec %.1f M/s\tsnprintf %%.9g %.1f M/s"
               "\tratio %.2fx\n",
               names[s], a / 1e6, b / 1e6, a / b);
    }
    free(normal);
    free(bits);
    return 0;
}
