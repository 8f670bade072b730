/* Random-access records: each rank pwrites 4,096 records of 16 KiB at a random permutation of the slots
   of its own 64 MiB region of a shared file, then preads them in another random order. */
#include <mpi.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define REC 16384
#define N 4096
static void shuffle(int *a, unsigned seed) {
    for (int i = 0; i < N; i++) a[i] = i;
    for (int i = N - 1; i > 0; i--) { seed = seed * 1103515245u + 12345u; int j = (seed >> 8) % (i + 1);
        int t = a[i]; a[i] = a[j]; a[j] = t; }
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int fd = open(argv[1], O_CREAT | O_RDWR, 0644);
    static char buf[REC]; memset(buf, 'a' + rank, sizeof buf);
    static int slot[N];
    off_t base = (off_t)rank * N * REC;
    shuffle(slot, 17u + rank);
    for (int i = 0; i < N; i++) if (pwrite(fd, buf, REC, base + (off_t)slot[i] * REC) != REC) return 1;
    MPI_Barrier(MPI_COMM_WORLD);
    shuffle(slot, 91u + rank);
    for (int i = 0; i < N; i++) if (pread(fd, buf, REC, base + (off_t)slot[i] * REC) != REC) return 1;
    close(fd);
    MPI_Finalize();
    return 0;
}
