/* A shared file written rank-interleaved in 4 KiB records: record i of rank r at (i * nranks + r) * 4 KiB,
   16,384 records per rank (64 MiB). */
#include <mpi.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#define REC 4096
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int fd = open(argv[1], O_CREAT | O_WRONLY, 0644);
    char buf[REC]; memset(buf, 'a' + rank, sizeof buf);
    for (int i = 0; i < 16384; i++)
        if (pwrite(fd, buf, REC, ((off_t)i * size + rank) * REC) != REC) return 1;
    close(fd);
    MPI_Finalize();
    return 0;
}
