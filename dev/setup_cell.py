# Setup, the same in every lesson. On Colab it installs the small course package (never torch,
# which Colab already has); anywhere else it only reports the versions in use.
import sys
if "google.colab" in sys.modules:
    %pip install -q "headlab @ git+https://github.com/heads-course/heads"
import headlab
headlab.setup()
