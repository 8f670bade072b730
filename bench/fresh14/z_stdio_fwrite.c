/* Small records through STDIO to a file per process: argv[2] fwrite's of argv[3] bytes each rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = atoi(argv[2]), size = atoi(argv[3]);
    char path[512]; snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    FILE *f = fopen(path, "wb");
    char *rec = malloc(size); memset(rec, 'a' + rank, size);
    for (int i = 0; i < n; i++) if (fwrite(rec, size, 1, f) != 1) return 1;
    fclose(f);
    free(rec);
    MPI_Finalize();
    return 0;
}
