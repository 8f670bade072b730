/* Independent MPI-IO: each rank writes its own contiguous 16 MiB block of a shared file in 2,048
   MPI_File_write_at of 8 KiB, then reads it back the same way. */
#include <mpi.h>
#include <string.h>
#define REC 8192
#define N 2048
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    static char buf[REC]; memset(buf, 'a' + rank, sizeof buf);
    MPI_Offset base = (MPI_Offset)rank * N * REC;
    MPI_Status st;
    for (int i = 0; i < N; i++) MPI_File_write_at(fh, base + (MPI_Offset)i * REC, buf, REC, MPI_BYTE, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) MPI_File_read_at(fh, base + (MPI_Offset)i * REC, buf, REC, MPI_BYTE, &st);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
