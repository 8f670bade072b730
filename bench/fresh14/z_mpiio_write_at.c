/* Small independent MPI-IO records, rank-interleaved in a shared file: argv[2] MPI_File_write_at of
   argv[3] bytes each rank, record i of rank r at (i * nranks + r) * argv[3]. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int n = atoi(argv[2]), size = atoi(argv[3]);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    char *buf = malloc(size); memset(buf, 'a' + rank, size);
    MPI_Status st;
    for (int i = 0; i < n; i++)
        MPI_File_write_at(fh, ((MPI_Offset)i * nranks + rank) * size, buf, size, MPI_BYTE, &st);
    MPI_File_close(&fh);
    free(buf);
    MPI_Finalize();
    return 0;
}
