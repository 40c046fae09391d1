# The authority repository through libgit2 (src/git/), on temporary bare repositories.
aios_test(git_tests git/repository_test.cpp)
