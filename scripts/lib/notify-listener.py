# A stand-in for PID 1's notify socket, for tests and benchmarks (Node has no
# unix datagram sockets): binds a SOCK_DGRAM socket at argv[1], prints each
# datagram as a JSON string on its own line (the first line is "listening"),
# and closes any fd passed with it, as PID 1 does with systemd-notify's
# barrier fd (without that, systemd-notify would sit out its 5 s timeout).
import socket, sys, os, array, json
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print(json.dumps("listening"), flush=True)
while True:
    msg, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(64))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds = array.array('i'); fds.frombytes(data[:len(data) - len(data) % 4])
            for fd in fds: os.close(fd)
    print(json.dumps(msg.decode()), flush=True)
