"""The course's figures: the architecture diagrams (`diagrams`), the plots of attention,
encodings and training (`viz`), the measurements notebook 02 plots (`cost`), and the Chinese
font they draw with (fonts/). The only part of minitf that imports matplotlib.
"""
