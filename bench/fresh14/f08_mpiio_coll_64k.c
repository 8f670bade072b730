/* Collective MPI-IO: 512 MPI_File_write_at_all of 64 KiB per rank, rank-interleaved (call i of rank r at
   (i * nranks + r) * 64 KiB: 32 MiB a rank), then the same with MPI_File_read_at_all. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#define REC 65536
#define N 512
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    char *buf = malloc(REC); memset(buf, 'a' + rank, REC);
    MPI_Status st;
    for (int i = 0; i < N; i++)
        MPI_File_write_at_all(fh, ((MPI_Offset)i * size + rank) * REC, buf, REC, MPI_BYTE, &st);
    for (int i = 0; i < N; i++)
        MPI_File_read_at_all(fh, ((MPI_Offset)i * size + rank) * REC, buf, REC, MPI_BYTE, &st);
    MPI_File_close(&fh);
    free(buf);
    MPI_Finalize();
    return 0;
}
