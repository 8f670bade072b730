/* A checkpointing logger: each rank appends 4,096 records of 256 B to its own file, fsync after every one. */
#include <mpi.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[512]; snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    char buf[256]; memset(buf, 'a' + rank, sizeof buf);
    for (int i = 0; i < 4096; i++) {
        if (write(fd, buf, sizeof buf) != sizeof buf) return 1;
        fsync(fd);
    }
    close(fd);
    MPI_Finalize();
    return 0;
}
