# The authority repository through libgit2 (src/git/), on temporary bare repositories, and the
# packs and mirror that carry it to workers on other hosts.
aios_test(git_tests git/repository_test.cpp git/mirror_test.cpp git/worktree_test.cpp)
