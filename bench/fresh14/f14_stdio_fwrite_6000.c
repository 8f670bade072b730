/* STDIO records of 6,000 B: each rank fwrite's 2,800 to its own file (about 16 MB), closes it, then
   fread's them back. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#define REC 6000
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[512]; snprintf(path, sizeof path, "%s.%d.dat", argv[1], rank);
    static char rec[REC]; memset(rec, 'a' + rank, sizeof rec);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 2800; i++) if (fwrite(rec, REC, 1, f) != 1) return 1;
    fclose(f);
    MPI_Barrier(MPI_COMM_WORLD);
    f = fopen(path, "rb");
    for (int i = 0; i < 2800; i++) if (fread(rec, REC, 1, f) != 1) return 1;
    fclose(f);
    MPI_Finalize();
    return 0;
}
