import Halyard
