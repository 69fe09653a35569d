"""The command classifier's program tables: which category a program is by its name alone.

Owns the static tables (read-only, build/test, file-mutating, destructive, network, process
control, privileged and opaque programs; shells, multi-call binaries, interpreters with their
inline-code options), the system directories a program may be run from by path, the targets a
write to never counts (``/dev/null``...) and the device prefixes a write to destroys, and
``table_category``: a program's category from the tables. Pure data: no I/O.
"""

from __future__ import annotations

from air.contracts.permission import CommandCategory

__all__ = [
    "BUILD_TEST_PROGRAMS",
    "DESTRUCTIVE_PROGRAMS",
    "DEVICE_PREFIXES",
    "FILE_MUTATION_PROGRAMS",
    "INTERPRETERS",
    "MULTICALL",
    "NETWORK_PROGRAMS",
    "NULL_TARGETS",
    "OPAQUE_PROGRAMS",
    "PRIVILEGED_PROGRAMS",
    "PROCESS_CONTROL_PROGRAMS",
    "READ_ONLY_PROGRAMS",
    "SAFE_BIN_DIRS",
    "SHELLS",
    "table_category",
]

C = CommandCategory

SAFE_BIN_DIRS = {
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
}
NULL_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
DEVICE_PREFIXES = (
    "/dev/sd",
    "/dev/nvme",
    "/dev/hd",
    "/dev/vd",
    "/dev/mem",
    "/dev/kmem",
    "/dev/mmc",
)

READ_ONLY_PROGRAMS = frozenset(
    """ls cat head tail less more wc grep egrep fgrep rg ag ack echo printf pwd whoami id date
    uname which type file stat du df tree diff cmp sort uniq cut tr jq yq basename dirname
    realpath readlink true false test [ seq nl column hexdump xxd od strings md5sum sha256sum
    sha1sum sha512sum cksum b2sum tac rev fold fmt paste join comm expand unexpand zcat bzcat
    xzcat man help cd pushd popd dirs ps free uptime hostname nproc getconf locale tput clear
    sleep printenv base64 base32 groups lsb_release arch env_list shasum look whereis apropos
    pgrep lscpu lsblk lsusb lspci pstree vmstat iostat time command_v hash set shopt umask read
    wait jobs cal bc expr factor numfmt tsort objdump nm readelf size c++filt addr2line
    gcov pydoc tokei cloc sloccount fd fdfind bat exa eza less glow highlight""".split()
)
BUILD_TEST_PROGRAMS = frozenset(
    """make gmake cmake ctest ninja meson gcc g++ cc c++ clang clang++ ld ar as ranlib pytest
    py.test tox nox mypy ruff black isort flake8 pylint pyright rustc javac java mvn gradle
    gradlew tsc eslint prettier jest vitest mocha cppcheck clang-tidy clang-format valgrind gdb
    lldb ldd pre-commit shellcheck bazel bazelisk sphinx-build coverage autoreconf autoconf clangd
    automake configure scons ccache gofmt rustfmt lint-imports hypothesis bandit pydocstyle
    ctags cscope doxygen dot latexmk pdflatex xelatex pandoc mkdocs tsx ts-node deno bun
    node-gyp swift swiftc kotlinc dotnet ghc cabal stack stylua luacheck zig nim dune opam
    elixir mix erl rebar3 iex php composer phpunit rspec rake bundle""".split()
)
FILE_MUTATION_PROGRAMS = frozenset(
    "touch mkdir cp mv ln chmod install patch truncate split mktemp gzip gunzip bzip2 bunzip2"
    " xz unxz zip unzip csplit tee".split()
)
DESTRUCTIVE_PROGRAMS = frozenset(
    "rm shred wipefs mkfs fdisk sfdisk parted gdisk srm unlink rmdir blkdiscard".split()
)
NETWORK_PROGRAMS = frozenset(
    """curl wget ssh scp sftp nc ncat netcat socat telnet ftp ping dig nslookup host nmap
    ssh-keyscan http https aria2c gh aws gcloud az kubectl helm lftp tftp mosh rclone s3cmd
    openssl websocat whois traceroute mtr""".split()
)
PROCESS_CONTROL_PROGRAMS = frozenset(
    "kill killall pkill setsid disown screen tmux renice at batch crontab strace ltrace"
    " ulimit trap bg fg nohup watch inotifywait entr".split()
)
PRIVILEGED_PROGRAMS = frozenset(
    """sudo doas su pkexec chroot mount umount insmod rmmod modprobe sysctl systemctl service
    chown chgrp setcap iptables ip6tables nft ufw useradd usermod userdel passwd groupadd
    visudo reboot shutdown halt poweroff init telinit docker podman launchctl chattr swapon
    swapoff losetup capsh nsenter unshare firewall-cmd update-grub grub-install dmsetup
    cryptsetup setfacl apt apt-get aptitude dpkg yum dnf rpm pacman zypper apk snap flatpak
    mknod""".split()
)
OPAQUE_PROGRAMS = frozenset(
    "eval source . exec alias unalias enable builtin function declare_f coproc compgen"
    " complete fc history".split()
)
SHELLS = frozenset("sh bash zsh dash ksh mksh fish ash csh tcsh".split())
MULTICALL = frozenset({"busybox", "toybox"})
INTERPRETERS = {
    "python": ("-c",),
    "python3": ("-c",),
    "python2": ("-c",),
    "pypy": ("-c",),
    "pypy3": ("-c",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "php": ("-r",),
    "lua": ("-e",),
    "tclsh": (),
    "Rscript": ("-e",),
    "osascript": ("-e",),
    "pwsh": ("-c", "-Command"),
}


def table_category(prog: str) -> CommandCategory | None:
    """``prog``'s category from the tables (the riskiest one it is in), None when unknown."""
    for table, cat in (
        (OPAQUE_PROGRAMS, C.OPAQUE),
        (PRIVILEGED_PROGRAMS, C.PRIVILEGED),
        (DESTRUCTIVE_PROGRAMS, C.DESTRUCTIVE),
        (PROCESS_CONTROL_PROGRAMS, C.PROCESS_CONTROL),
        (NETWORK_PROGRAMS, C.NETWORK),
        (FILE_MUTATION_PROGRAMS, C.FILE_MUTATION),
        (BUILD_TEST_PROGRAMS, C.BUILD_TEST),
        (READ_ONLY_PROGRAMS, C.READ_ONLY),
    ):
        if prog in table:
            return cat
    if prog in SHELLS or prog in INTERPRETERS or prog in MULTICALL:
        return C.OPAQUE
    return None
