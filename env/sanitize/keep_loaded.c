/* Preloaded into every process of an env/sanitize.sh run. Open MPI unloads
   its components (mca_*.so) at MPI_Finalize, and LeakSanitizer, which looks
   at exit, then sees what they allocated as "<unknown module>", which no
   suppression can match. Kept mapped, the component is named, and
   lsan.supp can tell Open MPI's own leaks from tandem's. */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
