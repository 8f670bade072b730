/* Tiny independent MPI-IO records: 5,120 MPI_File_write_at of 192 B per rank, rank-interleaved in a
   shared file (record i of rank r at (i * nranks + r) * 192). */
#include <mpi.h>
#include <string.h>
#define REC 192
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    char buf[REC]; memset(buf, 'a' + rank, sizeof buf);
    MPI_Status st;
    for (int i = 0; i < 5120; i++)
        MPI_File_write_at(fh, ((MPI_Offset)i * size + rank) * REC, buf, REC, MPI_BYTE, &st);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
