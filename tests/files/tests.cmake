# The file discipline (src/files/): no-follow and beneath-a-root reads and writes.
aios_test(files_tests files/files_test.cpp files/copy_tree_test.cpp)
