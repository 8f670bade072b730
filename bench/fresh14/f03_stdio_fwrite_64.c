/* A binary event log through STDIO: each rank fwrite's 32,768 records of 64 B to its own file (2 MiB). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[512]; snprintf(path, sizeof path, "%s.%d.bin", argv[1], rank);
    FILE *f = fopen(path, "wb");
    char rec[64]; memset(rec, 'a' + rank, sizeof rec);
    for (int i = 0; i < 32768; i++) {
        memcpy(rec, &i, sizeof i);
        if (fwrite(rec, sizeof rec, 1, f) != 1) return 1;
    }
    fclose(f);
    MPI_Finalize();
    return 0;
}
