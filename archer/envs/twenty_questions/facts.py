"""Facts about the 157 Twenty Questions words: yes/no properties and how people ask about them.

A data module for the knowledge-base oracle (``knowledge_oracle.py``) and the scripted questioners. The table is
written by property: each property lists the words for which it is true (every other word is false) and the
questions that ask about it. Facts describe the typical object a careful person pictures for the word (a typical
boat has an engine, a typical scooter is a kick scooter, tomatoes are vegetables in the kitchen sense); where
people would disagree, a fact is left out or given to the majority reading.

Question phrasings are separated by ``|``. A phrasing that starts with ``~`` asks the property's negation ("Is it
natural?" is answered "Yes." exactly when ``is_man_made`` is false). The first plain phrasing is the canonical
question.

Every word has a distinct property vector, so a questioner that asks enough properties can always tell any two
words apart (``tests/unit/test_knowledge_oracle.py`` checks this).

The last section holds the oracle's wider vocabulary: more phrasings per property, questions with the same answer
for every word ("Is it a bird?"), what things are used for, and other names of the words ("fridge").
"""

from __future__ import annotations

from dataclasses import dataclass

from archer.envs.twenty_questions.words import WORDS

_NAMES: tuple[str, ...] = tuple(word.name for word in WORDS)


def _category(category: str) -> str:
    return ", ".join(word.name for word in WORDS if word.category == category)


_ANIMALS = _category("Animals")
_FRUITS = _category("Fruits")
_VEGETABLES = _category("Vegetables")
_VEHICLES = _category("Vehicles")
_CLOTHES = _category("Clothes")
_ELECTRONICS = _category("Electronics")
_INSTRUMENTS = _category("Musical Instruments")
_FURNITURE = _category("Furniture")
_OFFICE = _category("Office Supplies")
_KITCHEN = _category("Kitchen Tools")
_NATURE = _category("Nature")
_TOYS = _category("Toys")
_JEWELRY = _category("Jewelry")
_GARDEN = _category("Garden Supplies")
_TOOLS = _category("Tools")
_SPORTS = _category("Sports")

_POCKET_SIZED = (
    "golf ball, key, pen, pencil, sharpie, marker, eraser, battery, ring, earring, brooch, hairclip, pendant, "
    "locket, necklace, bracelet, watch, grape, strawberry, peas, smartphone, lego"
)
_ENGINE = "car, truck, motorcycle, boat, airplane, train, bus, helicopter, ship, lawn mower"
_NATURAL = ", ".join((_ANIMALS, _FRUITS, _VEGETABLES, _NATURE))

# name: (the words for which the property is true, the questions that ask about it)
_TABLE: dict[str, tuple[str, str]] = {
    # Living things
    "is_living": (
        f"{_ANIMALS}, tree, bush, cactus",
        "Is it alive? | Is it a living thing? | Is it living? | Is it a living organism?",
    ),
    "is_animal": (
        _ANIMALS,
        "Is it an animal? | Is it a type of animal? | Is the object an animal? | Is it a creature?",
    ),
    "is_mammal": (_ANIMALS, "Is it a mammal? | Is it a kind of mammal?"),
    "is_plant": ("tree, bush, cactus", "Is it a plant? | Is it a kind of plant? | Is the object a plant?"),
    "has_fur": ("cat, dog, rabbit, lion, tiger, bear", "Does it have fur? | Is it furry? | Is it covered in fur?"),
    "has_wool": ("sheep", "Does it have wool? | Is it woolly? | Do we get wool from it?"),
    "is_pet": (
        "cat, dog, rabbit",
        "Is it a pet? | Is it kept as a pet? | Do people keep it as a pet? | Is it a common pet?",
    ),
    "is_domesticated": (
        "cat, dog, horse, cow, sheep, rabbit",
        "Is it domesticated? | Is it a domesticated animal?",
    ),
    "is_farm_animal": ("horse, cow, sheep", "Is it a farm animal? | Does it live on a farm? | Is it livestock?"),
    "is_wild_animal": (
        "lion, tiger, bear, elephant",
        "Is it a wild animal? | Does it live in the wild? | Would you see it at a zoo?",
    ),
    "eats_meat": ("cat, dog, lion, tiger, bear", "Does it eat meat? | Is it a carnivore? | Is it a meat eater?"),
    "eats_plants": ("horse, cow, sheep, rabbit, elephant, bear", "Does it eat plants? | Does it eat vegetation?"),
    "has_hooves": ("horse, cow, sheep", "Does it have hooves? | Does it have hoofs?"),
    "has_stripes": ("tiger", "Does it have stripes? | Is it striped?"),
    "has_mane": ("lion, horse", "Does it have a mane?"),
    "barks": ("dog", "Does it bark? | Can it bark?"),
    "meows": ("cat", "Does it meow? | Does it purr?"),
    "hops": ("rabbit", "Does it hop? | Does it move by hopping?"),
    "gives_milk": ("cow", "Do people drink its milk? | Is it a dairy animal?"),
    "has_trunk": ("elephant, tree", "Does it have a trunk?"),
    "has_tusks": ("elephant", "Does it have tusks?"),
    "hibernates": ("bear", "Does it hibernate? | Does it sleep through the winter?"),
    "has_tail": (f"{_ANIMALS}, airplane, helicopter, kite", "Does it have a tail?"),
    "has_eyes": (f"{_ANIMALS}, doll", "Does it have eyes?"),
    "has_teeth": (f"{_ANIMALS}, saw", "Does it have teeth?"),
    "has_legs": (f"{_ANIMALS}, chair, table, desk, bed, couch, doll", "Does it have legs?"),
    "has_four_legs": (f"{_ANIMALS}, chair, table, desk, bed, couch", "Does it have four legs? | Does it have 4 legs?"),
    "can_ride": (f"horse, elephant, {_VEHICLES}", "Can you ride it? | Do people ride it?"),
    "has_leaves": ("tree, bush, forest, spinach", "Does it have leaves?"),
    "grows_in_desert": ("cactus", "Does it grow in the desert? | Does it live in the desert?"),
    "is_prickly": ("cactus, pineapple", "Is it prickly? | Is it spiky?"),
    # Food
    "is_edible": (
        f"{_FRUITS}, {_VEGETABLES}",
        "Can you eat it? | Is it edible? | Is it food? | Is it something you can eat? | Do people eat it?",
    ),
    "is_fruit": (_FRUITS, "Is it a fruit? | Is it a kind of fruit?"),
    "is_vegetable": (_VEGETABLES, "Is it a vegetable? | Is it a type of vegetable? | Is it a veggie?"),
    "is_sweet": (_FRUITS, "Is it sweet? | Does it taste sweet?"),
    "grows_on_trees": ("apple, banana, orange, mango, peach", "Does it grow on trees? | Does it grow on a tree?"),
    "grows_underground": ("carrot, potato, onion", "Does it grow underground? | Does it grow under the ground?"),
    "grows_on_vine": (
        "grape, watermelon, cantaloupe, tomato, cucumber, peas",
        "Does it grow on a vine? | Does it grow on vines?",
    ),
    "has_pit": ("mango, peach", "Does it have a pit? | Does it have a big pit?"),
    "is_citrus": ("orange", "Is it a citrus fruit? | Is it citrus?"),
    "is_tropical": ("banana, pineapple, mango", "Is it a tropical fruit? | Is it tropical?"),
    "is_melon": ("watermelon, cantaloupe", "Is it a melon? | Is it a type of melon?"),
    "is_leafy_green": ("spinach", "Is it a leafy green? | Is it a leafy vegetable?"),
    "grows_in_pods": ("peas", "Does it grow in pods? | Does it come in a pod?"),
    "grows_in_bunches": ("banana, grape", "Does it grow in bunches? | Does it come in bunches?"),
    "is_fuzzy": ("peach, tennis ball", "Is it fuzzy? | Does it have a fuzzy surface?"),
    "makes_you_cry": ("onion", "Does it make you cry when you cut it?"),
    # Colour (of the typical object, as people picture it)
    "is_red": ("apple, strawberry, tomato", "Is it red? | Is it red in color? | Is it usually red?"),
    "is_green": (
        "watermelon, broccoli, spinach, celery, cucumber, peas, cactus, tree, bush, forest",
        "Is it green? | Is it green in color?",
    ),
    "is_yellow": ("banana, corn, tennis ball, pineapple", "Is it yellow? | Is it yellow in color?"),
    "is_orange_colored": (
        "orange, carrot, cantaloupe, basketball",
        "Is it orange in color? | Is it the color orange? | Is it orange colored? | Is its color orange?",
    ),
    "is_white": ("baseball, golf ball, volleyball, paper, toothpaste", "Is it white? | Is it white in color?"),
    "is_brown": ("potato, football", "Is it brown? | Is it brown in color?"),
    # Material
    "made_of_metal": (
        "car, truck, motorcycle, airplane, train, bus, helicopter, scooter, ship, knife, spoon, fork, cooking pot, "
        "pan, whisk, hammer, screwdriver, wrench, saw, pliers, drill, shovel, rake, key, scissors, stapler, battery, "
        "saxophone, trumpet, trombone, flute, earring, necklace, bracelet, ring, brooch, pendant, locket, watch, "
        "refrigerator, microwave, lawn mower",
        "Is it made of metal? | Is it metal? | Is it metallic? | Is it made out of metal?",
    ),
    "made_of_wood": (
        "table, chair, desk, dresser, bookcase, nightstand, bed, pencil, baseball bat, violin, guitar, piano, harp, "
        "clarinet, chopstick, tree",
        "Is it made of wood? | Is it wooden? | Is it made out of wood?",
    ),
    "made_of_plastic": (
        "lego, toothbrush, pen, sharpie, marker, calculator, printer, computer keyboard, headphone, helmet",
        "Is it made of plastic? | Is it plastic?",
    ),
    "made_of_fabric": (
        "shirt, pants, jacket, dress, skirt, socks, hat, scarf, gloves, pillow, canvas",
        "Is it made of fabric? | Is it made of cloth?",
    ),
    "made_of_paper": ("paper, diary, calendar, puzzle", "Is it made of paper? | Is it made out of paper?"),
    "made_of_leather": ("belt, boots, football, baseball", "Is it made of leather?"),
    "made_of_stone": ("rock, mountain, meteorite", "Is it made of stone? | Is it made of rock?"),
    "made_of_rubber": ("eraser, basketball", "Is it made of rubber?"),
    # Technology and machines
    "is_electronic": (
        f"{_ELECTRONICS}, printer, calculator",
        "Is it electronic? | Is it an electronic device? | Is it a piece of electronics?",
    ),
    "needs_electricity": (
        f"{_ELECTRONICS}, printer, calculator, drill",
        "Does it run on electricity? | Does it use electricity? | Does it need electricity to work?",
    ),
    "has_screen": (
        "computer, smartphone, television, monitor, camera, calculator",
        "Does it have a screen? | Does it have a display?",
    ),
    "has_keys": ("piano, computer keyboard, computer, calculator, saxophone, flute, clarinet", "Does it have keys?"),
    "used_for_typing": ("computer keyboard, computer, smartphone", "Do you type on it? | Is it used for typing?"),
    "can_take_photos": ("camera, smartphone", "Can it take pictures? | Can you take photos with it?"),
    "can_make_calls": ("smartphone", "Can you make phone calls with it? | Can you call people with it?"),
    "connects_to_internet": ("computer, smartphone", "Can it connect to the internet? | Can you use it to go online?"),
    "plays_music": ("headphone, smartphone, computer, television", "Can you listen to music with it?"),
    "makes_noise": (
        "cat, dog, horse, cow, sheep, lion, tiger, bear, elephant, "
        f"{_INSTRUMENTS}, car, truck, motorcycle, airplane, train, bus, helicopter, blender, drill, lawn mower, "
        "smartphone, television, headphone, printer",
        "Does it make noise? | Does it make a sound?",
    ),
    "has_engine": (_ENGINE, "Does it have an engine? | Is it powered by an engine?"),
    "has_motor": (f"{_ENGINE}, blender, drill", "Does it have a motor?"),
    "has_wheels": ("car, truck, motorcycle, airplane, train, bus, scooter, lawn mower", "Does it have wheels?"),
    "has_two_wheels": ("motorcycle, scooter", "Does it have two wheels? | Does it have 2 wheels?"),
    "flies": ("airplane, helicopter, kite", "Can it fly? | Does it fly?"),
    "travels_on_water": ("boat, ship", "Does it travel on water? | Is it used on water?"),
    "is_vehicle": (
        _VEHICLES,
        "Is it a vehicle? | Is it a mode of transportation? | Is it used for transportation?",
    ),
    "carries_many_people": (
        "bus, train, airplane, ship",
        "Can it carry many people at once? | Does it carry a lot of passengers?",
    ),
    "has_wings": ("airplane", "Does it have wings?"),
    "runs_on_tracks": ("train", "Does it run on tracks? | Does it travel on rails?"),
    "carries_cargo": ("truck, train, ship", "Is it used to carry cargo? | Does it transport goods?"),
    "has_door": (
        "car, truck, bus, airplane, train, helicopter, refrigerator, microwave",
        "Does it have a door? | Does it have doors?",
    ),
    "can_drive": ("car, truck, bus, motorcycle", "Can you drive it? | Do people drive it?"),
    # Size, weight and shape
    "fits_in_pocket": (
        _POCKET_SIZED,
        "Can it fit in your pocket? | Is it small enough to fit in a pocket? | Can you put it in your pocket?",
    ),
    "fits_in_hand": (
        f"{_POCKET_SIZED}, baseball, tennis ball, apple, orange, banana, peach, mango, tomato, onion, potato, carrot, "
        "cucumber, celery, corn, broccoli, knife, spoon, fork, cup, chopstick, whisk, hammer, screwdriver, wrench, "
        "pliers, drill, paintbrush, toothbrush, toothpaste, glue, stapler, scissors, calculator, camera, rock, diary, "
        "paper, headphone, doll, socks, gloves",
        "Can you hold it in one hand? | Does it fit in your hand? | Is it small enough to hold in one hand?",
    ),
    "bigger_than_a_breadbox": (
        "cat, dog, horse, cow, sheep, lion, tiger, bear, elephant, "
        f"{_VEHICLES}, {_FURNITURE}, {_INSTRUMENTS}, tennis racket, baseball bat, watermelon, shirt, pants, jacket, "
        "dress, skirt, scarf, belt, computer, television, monitor, microwave, refrigerator, "
        "printer, painting, canvas, sculpture, tree, bush, mountain, forest, ocean, sea, lake, river, kite, shovel, "
        "rake, watering can, lawn mower, saw",
        "Is it bigger than a breadbox? | Is it larger than a breadbox?",
    ),
    "bigger_than_a_person": (
        "horse, cow, elephant, bear, lion, tiger, car, truck, motorcycle, boat, airplane, train, bus, helicopter, "
        "ship, tree, mountain, forest, ocean, sea, lake, river, piano, bed, couch, mattress, refrigerator",
        "Is it bigger than a person? | Is it larger than a human? | Is it bigger than a human?",
    ),
    "bigger_than_a_car": (
        "truck, bus, airplane, train, ship, helicopter, elephant, tree, mountain, forest, ocean, sea, lake, river",
        "Is it bigger than a car? | Is it larger than a car?",
    ),
    "bigger_than_a_house": (
        "airplane, train, ship, mountain, forest, ocean, sea, lake, river",
        "Is it bigger than a house? | Is it larger than a house?",
    ),
    "is_heavy": (
        "horse, cow, lion, tiger, bear, elephant, car, truck, motorcycle, boat, airplane, train, bus, helicopter, "
        "ship, piano, refrigerator, bed, couch, dresser, bookcase, tree, mountain, forest, ocean, sea, lake, river",
        "Is it heavy? | Is it too heavy to lift?",
    ),
    "is_round": (
        "basketball, baseball, soccer ball, golf ball, tennis ball, volleyball, orange, apple, grape, peas, plate, "
        "ring, bracelet, cantaloupe, tomato, onion, peach, bowl",
        "Is it round? | Is it round in shape?",
    ),
    "is_oval": ("football, watermelon", "Is it oval? | Is it oval shaped?"),
    "is_flat": ("plate, paper, canvas, painting, calendar", "Is it flat?"),
    "long_and_thin": (
        "pen, pencil, sharpie, marker, paintbrush, chopstick, toothbrush, baseball bat, screwdriver, flute, clarinet, "
        "carrot, celery, belt, scarf",
        "Is it long and thin?",
    ),
    "is_soft": (
        "pillow, mattress, couch, bed, socks, scarf, shirt, sheep, rabbit, cat",
        "Is it soft? | Is it soft to the touch?",
    ),
    # Where it is found
    "found_in_house": (
        f"{_FURNITURE}, {_ELECTRONICS}, {_KITCHEN}, {_CLOTHES}, {_OFFICE}, painting, eraser, marker, glue, "
        f"{_FRUITS}, {_VEGETABLES}, {_TOYS}, {_JEWELRY}, cat, dog, rabbit, piano, guitar, hammer, screwdriver, gloves",
        "Would you find it in a house? | Is it found in most homes? | Is it a household item? | "
        "Do people keep it in their home?",
    ),
    "found_in_kitchen": (
        f"{_KITCHEN}, microwave, refrigerator, blender, {_FRUITS}, {_VEGETABLES}",
        "Would you find it in a kitchen? | Is it found in the kitchen? | Is it kept in the kitchen?",
    ),
    "found_in_bedroom": (
        "bed, mattress, pillow, dresser, nightstand",
        "Would you find it in a bedroom? | Is it found in the bedroom?",
    ),
    "found_in_bathroom": ("toothbrush, toothpaste", "Would you find it in a bathroom? | Is it used in the bathroom?"),
    "found_in_office": (
        "desk, chair, pen, paper, stapler, printer, calculator, computer, monitor, computer keyboard, pencil, "
        "sharpie, scissors, calendar",
        "Would you find it in an office? | Is it found in an office?",
    ),
    "used_at_school": (
        "pen, paper, pencil, eraser, marker, glue, scissors, calculator, desk, chair",
        "Is it used at school? | Is it a school supply?",
    ),
    "used_outdoors": (
        f"{_NATURE}, {_VEHICLES}, horse, cow, sheep, lion, tiger, bear, elephant, {_GARDEN}, {_SPORTS}, kite",
        "Is it usually found outdoors? | Is it mostly used outside? | Is it found outside?",
    ),
    "from_space": ("meteorite", "Does it come from space? | Is it from outer space? | Does it fall from the sky?"),
    "is_place": (
        "mountain, forest, ocean, sea, lake, river",
        "Is it a place? | Can you visit it? | Is it a location?",
    ),
    "is_water_body": ("ocean, sea, lake, river", "Is it a body of water? | Is it made of water? | Is it water?"),
    "is_salty": ("ocean, sea", "Is it salty? | Does it have salt water?"),
    "flows": ("river", "Does it flow?"),
    "part_of_ocean": ("sea", "Is it part of an ocean? | Is it a part of the ocean?"),
    "can_swim_in": ("ocean, sea, lake, river", "Can you swim in it?"),
    "found_in_museum": ("painting, sculpture", "Would you find it in a museum? | Is it displayed in museums?"),
    "hangs_on_wall": ("painting, calendar", "Does it hang on a wall? | Do you hang it on the wall?"),
    # What it is for
    "is_tool": (
        "hammer, screwdriver, wrench, saw, pliers, drill, shovel, rake, scissors",
        "Is it a tool? | Is it a kind of tool?",
    ),
    "used_for_building_or_fixing": (
        _TOOLS,
        "Is it used for building things? | Is it used to fix things? | Is it used for repairs?",
    ),
    "turns_screws": ("screwdriver, drill", "Is it used with screws? | Do you use it to drive screws?"),
    "used_on_nuts_and_bolts": ("wrench", "Is it used to tighten nuts and bolts?"),
    "has_two_handles": ("pliers, scissors", "Does it have two handles?"),
    "used_to_hit": ("hammer, baseball bat, tennis racket", "Do you hit things with it? | Is it used to hit things?"),
    "used_for_cutting": (
        "knife, scissors, saw, lawn mower",
        "Is it used for cutting? | Can you cut things with it? | Is it used to cut things?",
    ),
    "is_sharp": ("knife, scissors, saw, cactus", "Is it sharp?"),
    "has_blade": ("knife, scissors, saw, lawn mower, blender", "Does it have a blade? | Does it have blades?"),
    "used_in_garden": (
        _GARDEN,
        "Is it used for gardening? | Is it used in the garden? | Is it gardening equipment?",
    ),
    "used_for_digging": ("shovel", "Is it used for digging? | Can you dig with it?"),
    "has_prongs": ("fork, rake", "Does it have prongs? | Does it have tines?"),
    "used_for_eating": (
        "spoon, fork, knife, chopstick, plate, bowl",
        "Is it used for eating? | Is it used when eating?",
    ),
    "used_for_drinking": ("cup", "Do you drink from it? | Is it used for drinking?"),
    "used_for_cooking": (
        "cooking pot, pan, whisk, microwave, blender, knife",
        "Is it used for cooking? | Do you cook with it? | Is it used to prepare food?",
    ),
    "gets_hot": ("cooking pot, pan, microwave", "Does it get hot? | Does it heat food?"),
    "keeps_things_cold": ("refrigerator", "Does it keep things cold? | Does it keep food cold?"),
    "holds_liquid": (
        "cup, bowl, cooking pot, watering can",
        "Can it hold liquid? | Can it hold water? | Is it a container?",
    ),
    "has_lid": ("cooking pot, blender", "Does it have a lid?"),
    "has_handle": (
        "toothbrush, knife, spoon, fork, cooking pot, pan, cup, shovel, rake, hammer, screwdriver, wrench, saw, "
        "watering can, paintbrush, tennis racket, whisk, lawn mower, drill, pliers, scissors, baseball bat, "
        "refrigerator",
        "Does it have a handle?",
    ),
    "has_bristles": ("paintbrush, toothbrush", "Does it have bristles?"),
    "used_for_cleaning": ("toothbrush, toothpaste", "Is it used for cleaning? | Is it used to clean teeth?"),
    "used_for_writing": (
        "pen, pencil, sharpie, marker",
        "Is it used for writing? | Can you write with it? | Do you write with it?",
    ),
    "used_for_drawing": (
        "pen, pencil, sharpie, marker, paintbrush",
        "Can you draw with it? | Is it used for drawing?",
    ),
    "written_on": ("paper, diary, calendar", "Do you write on it? | Can you write on it?"),
    "uses_ink": ("pen, sharpie, marker, printer", "Does it use ink? | Does it contain ink?"),
    "has_felt_tip": ("sharpie, marker", "Does it have a felt tip?"),
    "is_brand_name": ("sharpie, lego", "Is it a brand name? | Is it a brand?"),
    "can_be_sharpened": ("pencil, knife, scissors, saw", "Can it be sharpened? | Do you sharpen it?"),
    "used_to_erase": ("eraser", "Is it used to erase? | Does it remove mistakes?"),
    "is_sticky": ("glue", "Is it sticky? | Is it used to stick things together?"),
    "staples_paper": ("stapler", "Does it staple paper? | Is it used to staple papers together?"),
    "prints": ("printer", "Does it print? | Is it used for printing?"),
    "used_for_math": ("calculator, computer", "Is it used for math? | Can it do math? | Is it used to calculate?"),
    "opens_locks": ("key", "Does it open locks? | Is it used to open doors?"),
    "provides_power": ("battery", "Does it provide power? | Does it store electricity?"),
    "tells_time": ("watch, smartphone", "Does it tell time? | Can you tell the time with it?"),
    "shows_dates": ("calendar, smartphone", "Does it show the date?"),
    "is_book": ("diary", "Is it a book? | Is it a kind of book?"),
    "is_art_supply": (
        "paintbrush, canvas, eraser, marker, glue, pencil",
        "Is it an art supply? | Is it used for making art?",
    ),
    "is_artwork": ("painting, sculpture", "Is it a work of art? | Is it artwork? | Is it art?"),
    "is_decorative": (
        "painting, sculpture, earring, necklace, bracelet, ring, brooch, pendant, locket",
        "Is it used for decoration? | Is it decorative?",
    ),
    "used_for_painting": ("paintbrush, canvas", "Is it used for painting?"),
    "used_for_mixing": ("blender, whisk, spoon", "Is it used for mixing? | Do you mix things with it?"),
    "is_toy": (_TOYS, "Is it a toy? | Is it a kind of toy?"),
    "has_pieces": ("lego, puzzle", "Does it have many pieces? | Does it come in pieces?"),
    "looks_like_a_person": ("doll", "Does it look like a person? | Is it shaped like a person?"),
    "is_dangerous": ("lion, tiger, bear, knife, saw", "Is it dangerous?"),
    "costs_a_lot": (
        "car, truck, motorcycle, boat, airplane, train, bus, helicopter, ship, piano",
        "Does it cost more than a thousand dollars? | Is it very expensive?",
    ),
    "is_man_made": (
        ", ".join(name for name in _NAMES if name not in _NATURAL.split(", ")),
        "Is it man-made? | Is it made by humans? | Did people make it? | ~Is it natural? | ~Is it found in nature? | "
        "~Does it occur naturally?",
    ),
    # Sports
    "used_in_sports": (_SPORTS, "Is it used in sports? | Is it sports equipment? | Is it used to play a sport?"),
    "is_ball": (
        "basketball, football, baseball, soccer ball, golf ball, tennis ball, volleyball",
        "Is it a ball? | Is it a type of ball?",
    ),
    "bounces": ("basketball, tennis ball, soccer ball, volleyball, golf ball", "Does it bounce? | Can it bounce?"),
    "kicked": ("soccer ball, football", "Do you kick it? | Is it kicked?"),
    "thrown": ("basketball, football, baseball", "Do you throw it? | Is it thrown?"),
    "hit_with_equipment": (
        "baseball, golf ball, tennis ball",
        "Is it hit with a bat, club or racket? | Do you hit it with a bat, club or racket?",
    ),
    "played_over_net": ("volleyball, tennis ball, tennis racket", "Is it used in a game played over a net?"),
    "has_dimples": ("golf ball", "Does it have dimples?"),
    "used_in_baseball": ("baseball, baseball bat, helmet", "Is it used in baseball?"),
    "used_in_tennis": ("tennis ball, tennis racket", "Is it used in tennis?"),
    "used_in_golf": ("golf ball", "Is it used in golf? | Is it used to play golf?"),
    "used_in_basketball": ("basketball", "Is it used in basketball? | Is it used to play basketball?"),
    "used_in_soccer": ("soccer ball", "Is it used in soccer? | Is it used to play soccer?"),
    "used_in_football": ("football, helmet", "Is it used in football? | Is it used to play football?"),
    "used_in_volleyball": ("volleyball", "Is it used in volleyball? | Is it used to play volleyball?"),
    "is_protective": ("helmet, gloves", "Does it protect you? | Is it protective gear? | Is it worn for protection?"),
    "has_strings": ("piano, guitar, violin, harp, tennis racket, kite", "Does it have strings?"),
    # Clothes and jewelry
    "is_clothing": (
        f"{_CLOTHES}, gloves",
        "Is it clothing? | Is it a piece of clothing? | Is it an article of clothing?",
    ),
    "is_wearable": (
        f"{_CLOTHES}, gloves, {_JEWELRY}, helmet, headphone",
        "Can you wear it? | Is it something you wear? | Do people wear it?",
    ),
    "worn_on_feet": ("shoes, boots, socks", "Do you wear it on your feet? | Is it worn on the feet?"),
    "worn_on_head": ("hat, helmet, headphone", "Do you wear it on your head? | Is it worn on the head?"),
    "worn_on_hands": ("gloves, ring", "Do you wear it on your hands? | Is it worn on the hand?"),
    "worn_on_wrist": ("bracelet, watch", "Do you wear it on your wrist? | Is it worn on the wrist?"),
    "worn_around_neck": (
        "scarf, necklace, pendant, locket",
        "Do you wear it around your neck? | Is it worn around the neck?",
    ),
    "worn_on_ears": ("earring, headphone", "Do you wear it on your ears? | Is it worn on the ears?"),
    "worn_in_hair": ("hairclip", "Do you wear it in your hair? | Is it worn in the hair?"),
    "worn_on_legs": ("pants, skirt", "Do you wear it on your legs? | Is it worn on the lower half of the body?"),
    "worn_on_upper_body": ("shirt, jacket, dress", "Is it worn on the upper body? | Do you wear it on your torso?"),
    "worn_around_waist": ("belt", "Do you wear it around your waist?"),
    "pinned_to_clothes": ("brooch", "Is it pinned to clothing? | Do you pin it on your clothes?"),
    "keeps_you_warm": ("jacket, scarf, gloves, socks", "Does it keep you warm? | Do you wear it when it is cold?"),
    "worn_mostly_by_women": ("dress, skirt, brooch, hairclip", "Is it mostly worn by women?"),
    "comes_in_pairs": (
        "chopstick, shoes, boots, socks, gloves, earring",
        "Does it come in pairs? | Does it come in a pair?",
    ),
    "is_jewelry": (_JEWELRY, "Is it jewelry? | Is it a piece of jewelry? | Is it a type of jewelry?"),
    "hangs_from_chain": ("pendant, locket", "Does it hang from a chain?"),
    "holds_a_photo": ("locket", "Can it hold a photo? | Does it open to hold a picture?"),
    # Furniture and the home
    "is_furniture": (
        "chair, table, bed, desk, couch, dresser, bookcase, nightstand, mattress",
        "Is it furniture? | Is it a piece of furniture? | Is it a type of furniture?",
    ),
    "used_for_sitting": ("chair, couch", "Is it used for sitting? | Is it made for sitting?"),
    "used_for_sleeping": ("bed, mattress, pillow", "Is it used for sleeping? | Do you sleep on it?"),
    "has_drawers": ("desk, dresser, nightstand", "Does it have drawers?"),
    "has_shelves": ("bookcase, refrigerator", "Does it have shelves?"),
    "stores_clothes": ("dresser", "Is it used to store clothes? | Do you keep clothes in it?"),
    "holds_books": ("bookcase", "Does it hold books? | Is it used to store books?"),
    "goes_next_to_bed": ("nightstand", "Does it go next to a bed? | Is it kept beside the bed?"),
    "is_kitchen_tool": (_KITCHEN, "Is it a kitchen utensil? | Is it a kitchen tool?"),
    "is_kitchen_appliance": ("microwave, refrigerator, blender", "Is it a kitchen appliance? | Is it an appliance?"),
    "is_office_supply": (
        "pen, paper, stapler, printer, calculator, pencil, sharpie, scissors, calendar, eraser, marker, glue",
        "Is it an office supply? | Is it stationery?",
    ),
    # Music
    "is_musical_instrument": (
        _INSTRUMENTS,
        "Is it a musical instrument? | Is it an instrument? | Is it used to make music?",
    ),
    "is_wind_instrument": (
        "saxophone, flute, trumpet, clarinet, trombone",
        "Is it a wind instrument? | Do you blow into it?",
    ),
    "is_brass_instrument": ("trumpet, trombone", "Is it a brass instrument?"),
    "is_woodwind": ("saxophone, flute, clarinet", "Is it a woodwind instrument?"),
    "is_string_instrument": ("guitar, violin, harp", "Is it a string instrument? | Is it a stringed instrument?"),
    "is_percussion": ("drum", "Is it a percussion instrument? | Do you hit it to make music?"),
    "played_with_bow": ("violin", "Is it played with a bow?"),
    "uses_reed": ("saxophone, clarinet", "Does it use a reed?"),
    "has_slide": ("trombone", "Does it have a slide?"),
    "has_valves": ("trumpet", "Does it have valves?"),
    "has_frets": ("guitar", "Does it have frets?"),
    "played_by_plucking": ("guitar, harp", "Do you pluck its strings? | Is it played by plucking strings?"),
}


@dataclass(frozen=True)
class Phrasing:
    """One way to ask about a property.

    Attributes:
        text: the question, e.g. ``"Is it natural?"``.
        negated: the question asks the property's negation, so "Yes." means the property is false.
    """

    text: str
    negated: bool = False


def _parse_members(prop: str, members: str) -> frozenset[str]:
    names = frozenset(name.strip() for name in members.split(",") if name.strip())
    unknown = sorted(names - set(_NAMES))
    if unknown:
        raise ValueError(f"property {prop!r} lists words that are not in the word list: {unknown}")
    return names


def _parse_phrasings(text: str) -> tuple[Phrasing, ...]:
    phrasings = []
    for part in text.split("|"):
        part = part.strip()
        negated = part.startswith("~")
        phrasings.append(Phrasing(part.lstrip("~").strip(), negated))
    return tuple(phrasings)


PROPERTY_WORDS: dict[str, frozenset[str]] = {
    prop: _parse_members(prop, members) for prop, (members, _) in _TABLE.items()
}
"""Property name -> canonical names of the words for which it is true."""

PROPERTY_PHRASINGS: dict[str, tuple[Phrasing, ...]] = {
    prop: _parse_phrasings(questions) for prop, (_, questions) in _TABLE.items()
}
"""Property name -> the questions that ask about it (scripted questioners draw among these)."""

PROPERTIES: tuple[str, ...] = tuple(_TABLE)

FACTS: dict[str, frozenset[str]] = {
    name: frozenset(prop for prop, words in PROPERTY_WORDS.items() if name in words) for name in _NAMES
}
"""Word canonical name -> the properties that are true for it (every other property is false)."""


# ------------------------------------------------------------------------------------------------ how people ask
# More ways to ask, for the knowledge-base oracle only (the scripted questioners keep to PROPERTY_PHRASINGS), in the
# same notation: "|" separates phrasings, "~" marks a phrasing that asks the negation.

ORACLE_PHRASINGS: dict[str, str] = {
    "is_living": "Is it a life form? | Is it an organism? | Is it something living? | Is it a living creature? | "
    "Is it biological? | ~Is it inanimate? | ~Is it an inanimate object? | ~Is it nonliving? | ~Is it non living?",
    "is_animal": "Does it breathe? | Can it move on its own? | Is it a beast? | Is it an animal species?",
    "is_mammal": "Is it a mammal species?",
    "is_plant": "Is it a plant species? | Does it photosynthesize?",
    "has_fur": "Is it covered with fur? | Does it have a fur coat?",
    "is_pet": "Is it a household pet? | Is it a domestic pet? | Can it be a pet? | Can you keep it as a pet? | "
    "Is it a pet animal?",
    "is_domesticated": "Is it a domestic animal? | Is it tame?",
    "used_for_writing": "Is it a writing instrument? | Is it a writing tool? | Is it a writing utensil? | "
    "Is it something you write with?",
    "used_for_drinking": "Can you drink out of it? | Do you drink out of it? | Can you drink from it?",
    "is_farm_animal": "Is it a barnyard animal? | Is it raised on farms? | Is it raised on a farm?",
    "is_wild_animal": "Is it wild? | Is it a zoo animal? | Does it live in a zoo?",
    "eats_meat": "Is it a predator? | Does it hunt? | Does it hunt other animals? | Is it carnivorous?",
    "is_edible": "Is it something to eat? | Is it eaten? | Can it be eaten? | Is it a food item? | "
    "Is it something people eat? | Is it eatable? | Do you eat it? | Is it a type of food? | Is it a food? | "
    "Is it something edible? | Can you consume it? | Is it a food product? | Is it eaten by people?",
    "is_vegetable": "Is it a veg? | Is it a vegetable plant?",
    "is_sweet": "Is it sugary? | Is it a sweet food?",
    "grows_underground": "Does it grow in the ground? | Does it grow in the soil? | Is it a root vegetable? | "
    "Does it grow under ground?",
    "is_melon": "Is it a kind of melon?",
    "is_tropical": "Does it grow in the tropics? | Does it grow in tropical places?",
    "has_pit": "Does it have a stone in the middle?",
    "is_electronic": "Is it an electronic item? | Is it an electronic gadget? | Is it a gadget? | "
    "Is it a piece of technology? | Is it technology? | Is it a tech item? | Is it an electronic appliance? | "
    "Is it electronics?",
    "needs_electricity": "Is it electric? | Is it electrical? | Is it powered by electricity? | "
    "Does it need power? | Does it use power? | Is it an electrical device? | Is it an electric device? | "
    "Does it require electricity? | Does it run on power? | Does it need electricity?",
    "has_screen": "Does it have a monitor? | Does it have a display screen?",
    "is_musical_instrument": "Is it used for music? | Is it used to play music? | Can you play it? | "
    "Do you play it? | Does it make music? | Is it a music instrument? | Can you make music with it? | "
    "Is it musical? | Can you play music on it? | Is it an instrument you play? | Is it played?",
    "is_furniture": "Is it a furniture item? | Is it an item of furniture?",
    "is_clothing": "Is it clothes? | Is it a garment? | Is it apparel? | Is it an item of clothing? | "
    "Is it a clothing item? | Is it a type of clothing? | Is it clothing you wear?",
    "is_jewelry": "Is it a jewel? | Is it a jewelry item?",
    "is_toy": "Is it a toy for children? | Is it a toy for kids? | Is it for kids? | Is it for children? | "
    "Is it a children's toy? | Is it a plaything?",
    "used_in_sports": "Is it sports related? | Is it used in a sport? | Is it related to sports? | "
    "Is it sporting equipment? | Is it a piece of sports equipment? | Is it athletic equipment? | "
    "Is it a sports item? | Is it sporting goods? | Is it used for playing sports?",
    "is_tool": "Is it a type of tool? | Is it a handy tool?",
    "is_kitchen_tool": "Is it a utensil? | Is it kitchenware? | Is it a kitchen item? | "
    "Is it a piece of kitchenware? | Is it a kitchen implement?",
    "is_kitchen_appliance": "Is it a home appliance? | Is it a household appliance?",
    "is_office_supply": "Is it an office item? | Is it office equipment? | Is it an office product?",
    "is_art_supply": "Is it an art tool? | Is it art supplies?",
    "is_artwork": "Is it a piece of art? | Is it an artwork? | Is it an art piece? | Is it fine art?",
    "is_ball": "Is it a sports ball? | Is it a kind of ball?",
    "is_water_body": "Is it a water body? | Is it a liquid? | Is it wet? | Is it made up of water? | "
    "Does it contain water? | Is it full of water?",
    "is_place": "Is it a geographical feature? | Is it a natural landmark? | Is it somewhere you can go? | "
    "Is it a geographic feature? | Is it a landform?",
    "is_man_made": "Is it manmade? | Is it human made? | Is it made by people? | Is it manufactured? | "
    "Is it artificial? | Was it made by humans? | Was it created by humans? | Is it something made by people? | "
    "Did humans make it? | Is it a man made object? | Is it made in a factory? | Is it man made? | "
    "Is it created by humans? | Is it something people make? | Do people make it? | Is it a human invention? | "
    "Is it an invention? | ~Is it a natural object? | ~Is it a natural thing? | ~Does it exist in nature? | "
    "~Is it part of nature? | ~Is it from nature? | ~Is it naturally occurring? | ~Is it found naturally? | "
    "~Does it occur in nature? | ~Is it something natural? | ~Is it made by nature?",
    "bigger_than_a_person": "Is it big? | Is it large? | Is it huge? | Is it enormous? | Is it giant? | "
    "Is it massive? | Is it tall? | Is it gigantic?",
    "fits_in_hand": "Is it small? | Is it little? | Is it handheld? | Can you hold it? | Is it compact? | "
    "Can you hold it in your hand? | Can you hold it with one hand? | Is it hand sized? | "
    "Does it fit in your palm? | Does it fit in one hand? | Can it be held in one hand? | "
    "Can it be held in your hand? | Is it small enough to hold? | Is it small enough to hold in your hand?",
    "fits_in_pocket": "Is it tiny? | Is it pocket sized? | Does it fit in a pocket? | "
    "Can you carry it in your pocket? | Would it fit in your pocket? | Can it fit in a pocket? | "
    "Is it small enough to fit in your pocket?",
    "is_heavy": "~Is it light? | ~Is it lightweight? | ~Can you lift it? | ~Can you carry it? | "
    "~Can you pick it up? | ~Is it portable? | ~Is it easy to carry? | ~Can a person lift it? | "
    "~Can one person carry it? | ~Can a person carry it? | ~Is it light enough to carry? | ~Is it easy to lift? | "
    "Is it very heavy?",
    "bigger_than_a_breadbox": "~Does it fit in a shoebox? | ~Does it fit in a breadbox? | "
    "~Would it fit in a breadbox? | ~Would it fit in a shoebox? | ~Can it fit in a breadbox?",
    "is_round": "Is it circular? | Is it round shaped? | Is it shaped like a circle?",
    "is_oval": "Is it egg shaped? | Is it an oval shape?",
    "long_and_thin": "Is it long and skinny? | Is it long and narrow? | Is it stick shaped? | "
    "Is it shaped like a stick?",
    "is_soft": "Is it squishy? | Is it soft and squishy?",
    "found_in_house": "Is it a household object? | Is it a household thing? | Is it a home item? | "
    "Is it a common household item? | Is it a household product?",
    "has_legs": "Does it stand on legs?",
    "can_ride": "Can you sit on it and ride it? | Can you ride on it? | Can you ride in it? | "
    "Can people ride in it? | Can it carry people? | Does it carry people? | Can it carry a person? | "
    "Can you travel in it?",
    "flies": "Is it able to fly? | Does it go in the air? | Does it fly in the sky? | Can it fly in the air?",
    "has_engine": "Does it run on gas? | Does it use fuel? | Does it need fuel? | Does it need gas? | "
    "Does it burn fuel? | Is it motorized?",
    "is_vehicle": "Is it a means of transportation? | Is it transportation? | Is it a means of transport? | "
    "Is it a mode of transport? | Is it a form of transportation? | Is it a transportation device? | "
    "Is it a way to travel? | Is it a vehicle for transport?",
    "travels_on_water": "Does it go on water? | Does it float? | Is it a watercraft? | Does it sail?",
    "is_sharp": "Does it have a sharp edge? | Does it have a sharp point? | Is it pointy? | Is it pointed?",
    "is_dangerous": "Could it hurt you? | Can it hurt you?",
    "costs_a_lot": "Is it expensive? | Is it costly? | ~Is it cheap? | ~Is it inexpensive? | ~Is it affordable?",
    "makes_noise": "Does it make sounds? | Is it loud? | Does it make a noise? | Can it make noise? | "
    "Can it make a sound? | Does it produce sound? | Is it noisy?",
    "is_wearable": "Is it worn? | Is it wearable? | Is it something you can wear? | Is it worn by people? | "
    "Do you wear it?",
    "is_protective": "Is it safety equipment? | Is it safety gear? | Is it protective equipment?",
    "comes_in_pairs": "Does it come as a pair? | Is it used in pairs? | Are there two of them? | Is it a pair?",
    "has_wheels": "Does it move on wheels? | Does it roll on wheels?",
    "has_strings": "Does it have a string?",
    "bounces": "Is it bouncy?",
    "is_wind_instrument": "Do you blow air into it? | Do you play it by blowing? | Is it played by blowing?",
    "is_percussion": "Is it a percussion? | Do you hit it? | Do you play it with sticks? | Is it played with sticks?",
    "is_string_instrument": "Is it a strings instrument? | Does it have strings you play?",
    "has_keys": "Does it have a keyboard?",
    "has_door": "Can you open its door?",
    "used_for_sleeping": "Do you sleep in it? | Do people sleep on it? | Is it something you sleep on?",
    "is_salty": "Is it salt water? | Is it made of salt water? | Is it saltwater?",
    "flows": "Does it flow downhill? | Does it have a current?",
    "tells_time": "Does it show the time? | Can it tell time? | Can it tell the time?",
    "is_fuzzy": "Is it hairy? | Does it have fuzz?",
    "can_swim_in": "Can people swim in it? | Is it something you can swim in?",
    "from_space": "Is it from space? | Did it come from space? | Is it extraterrestrial?",
    "is_book": "Is it a notebook? | Is it a journal?",
    "holds_liquid": "Can you put water in it? | Can you pour liquid into it? | Can it hold liquids? | "
    "Is it used to hold liquid? | Can it contain liquid?",
    "has_blade": "Does it have a cutting blade?",
    "used_for_eating": "Is it an eating utensil? | Is it used to eat? | Is it used to eat food? | Is it cutlery? | "
    "Is it silverware? | Is it tableware? | Is it dinnerware?",
    "is_decorative": "Is it decoration? | Is it a decoration? | Is it ornamental? | Is it an ornament?",
    "worn_mostly_by_women": "Is it worn by women? | Is it for women? | Is it mostly for women?",
    "is_brand_name": "Is it a brand name product? | Is it a trademark?",
    "is_white": "Is it white colored?",
}
"""Property -> more phrasings the oracle understands."""

CONSTANT_PHRASINGS: dict[bool, str] = {
    False: "Is it a bird? | Is it a fish? | Is it an insect? | Is it a bug? | Is it a reptile? | "
    "Is it an amphibian? | Is it a snake? | Is it a dinosaur? | Is it a flower? | Is it a person? | "
    "Is it a human? | Is it a human being? | Is it a man? | Is it a woman? | Is it a child? | Is it a baby? | "
    "Is it a drink? | Is it a beverage? | Is it a building? | Is it a house? | Is it a planet? | Is it a star? | "
    "Is it a country? | Is it a city? | Is it a continent? | Is it a body part? | Is it an organ? | "
    "Is it a number? | Is it a letter? | Is it a color? | Is it a shape? | Is it an idea? | Is it a concept? | "
    "Is it a feeling? | Is it an emotion? | Is it a movie? | Is it a song? | Is it an app? | Is it software? | "
    "Is it a website? | Is it a sport? | Is it weather? | Is it a gas? | Is it an event? | Is it a holiday? | "
    "Is it a job? | Is it a profession? | Is it a fictional character? | Is it a celebrity? | "
    "Is it a famous person? | Is it a chemical? | Is it a medicine? | Is it a drug? | Is it a disease? | "
    "Is it a language? | Is it a religion? | Is it fictional? | Is it imaginary? | Is it abstract? | "
    "Is it invisible? | Is it extinct? | Is it poisonous? | Is it virtual? | Is it microscopic? | "
    "Is it a mythical creature? | Is it a cartoon character? | Does it have feathers? | Does it have scales? | "
    "Does it have fins? | Does it have gills? | Does it lay eggs? | Does it live in water? | "
    "Does it live in the ocean? | Does it live in the sea? | Can it breathe underwater? | Does it have six legs? | "
    "Does it have eight legs?",
    True: "Is it real? | Does it exist? | Is it a physical object? | Is it a physical thing? | Is it tangible? | "
    "Can you touch it? | Can you see it? | Is it visible? | Is it something physical? | Is it a noun? | "
    "Is it something you can touch? | Is it something you can see?",
}
"""Questions with the same answer for every word: ``False`` -> "No." (none is a bird), ``True`` -> "Yes."."""

PURPOSE_PHRASES: dict[str, str] = {
    "used_for_cooking": "cooking | cook | cook food | cooking food | preparing food | prepare food | making food | "
    "make food | food preparation | preparing meal | prepare meal | making meal | make meal | baking | bake | "
    "cooking meal",
    "used_for_eating": "eating | eat | eat food | eating food | eating meal | eat meal | meal | eat with",
    "used_for_drinking": "drinking | drink | drink from | drink out of | drinking beverage | drink beverage | "
    "hold drink | holding drink | drinking water | drink water",
    "used_for_writing": "writing | write | write with | writing thing | writing note | write note | taking note | "
    "take note | writing letter | write letter",
    "used_for_drawing": "drawing | draw | draw with | sketching | sketch | drawing picture | draw picture",
    "used_for_painting": "painting | paint | paint with | painting picture | paint picture",
    "used_for_cutting": "cutting | cut | cut with | chopping | chop | slicing | slice | trimming | trim",
    "used_for_cleaning": "cleaning | clean | cleaning teeth | clean teeth | brushing teeth | brush teeth | "
    "hygiene | dental hygiene | dental care",
    "used_for_sleeping": "sleeping | sleep | sleep on",
    "used_for_sitting": "sitting | sit | seating | sitting on | sit on",
    "is_vehicle": "transportation | transport | transporting person | travel | traveling | getting around | "
    "commuting | commute | going place | get around | transport person",
    "carries_cargo": "carrying cargo | carry cargo | transporting good | transport good | carrying good | "
    "carry good | moving good | move good | shipping | delivery | delivering | deliver",
    "carries_many_people": "public transportation | public transport | mass transit | carrying passenger | "
    "carry passenger | carrying many person | carry many person",
    "is_musical_instrument": "music | making music | make music | playing music | play music | creating music | "
    "create music",
    "plays_music": "listening to music | listen to music | hearing music | hear music | listening | listen",
    "used_in_sports": "sport | playing sport | play sport | athletic",
    "used_for_building_or_fixing": "building | build | construction | fixing | fix | repair | repairing | "
    "carpentry | woodworking | home improvement | diy | building house | build house",
    "used_in_garden": "gardening | garden | yard work | yardwork | landscaping | lawn care | yard",
    "used_for_digging": "digging | dig | dig hole | digging hole",
    "can_make_calls": "calling | call | making call | make call | phone call | making phone call | "
    "make phone call | calling person | call person",
    "can_take_photos": "taking picture | take picture | taking photo | take photo | photography | photo | picture | "
    "recording video | record video",
    "tells_time": "telling time | tell time | keeping time | keep time | timekeeping | time | knowing time | "
    "know time | checking time | check time | telling what time it is",
    "used_for_math": "math | calculation | calculating | calculate | counting | count | doing math | do math | "
    "arithmetic",
    "prints": "printing | print | printing document | print document | printing paper",
    "used_for_typing": "typing | type | typing text | type text | entering text",
    "keeps_you_warm": "keeping warm | keep warm | keeping you warm | keep you warm | warmth | staying warm | "
    "stay warm",
    "is_protective": "protection | protecting | protect | safety | protect you | protecting you | "
    "keeping you safe | keep you safe | protecting head | protect head",
    "is_decorative": "decoration | decorating | decorate | decor | adornment",
    "opens_locks": "opening lock | open lock | opening door | open door | unlocking | unlock | unlocking door | "
    "unlock door | locking | lock | locking door | lock door",
    "provides_power": "power | powering | powering device | power device | energy | electricity | storing energy | "
    "store energy | storing electricity | store electricity",
    "used_to_hit": "hitting | hit | striking | strike | hammering | hammering nail | hit nail | pounding nail | "
    "pound nail | pounding",
    "used_to_erase": "erasing | erase | removing mistake | remove mistake | correcting mistake | correct mistake | "
    "erasing pencil mark | erase pencil mark",
    "is_sticky": "sticking | stick | gluing | sticking together | stick together | attaching | attach | joining | "
    "join | adhesion",
    "staples_paper": "stapling | staple | stapling paper | staple paper | holding paper together | "
    "hold paper together",
    "gets_hot": "heating | heat | heating food | heat food | warming food | warm food | reheating food | "
    "reheat food | heating up food | heat up food",
    "keeps_things_cold": "cooling | cool | keeping food cold | keep food cold | keeping cold | keep cold | "
    "refrigeration | refrigerating food | keeping food fresh | keep food fresh | cooling food | cool food",
    "used_for_mixing": "mixing | mix | mixing food | mix food | mixing ingredient | mix ingredient | stirring | "
    "stir | whisking | blending | blend | beating egg | beat egg",
    "stores_clothes": "storing clothing | store clothing | holding clothing | hold clothing | keeping clothing | "
    "keep clothing",
    "holds_books": "storing book | store book | holding book | hold book | displaying book | keeping book | keep book",
    "is_art_supply": "art | making art | make art | creating art | create art | crafting | craft",
    "used_at_school": "school | schoolwork | studying | study | homework",
    "turns_screws": "screwing | screw | driving screw | drive screw | turning screw | turn screw | "
    "tightening screw | tighten screw",
    "used_on_nuts_and_bolts": "tightening bolt | tighten bolt | turning bolt | turn bolt | tightening nut | "
    "tighten nut | loosening bolt | loosen bolt",
    "holds_liquid": "holding liquid | hold liquid | holding water | hold water | carrying water | carry water | "
    "storing liquid | store liquid",
    "is_toy": "child | kid | playing with | play with",
    "flies": "flying | fly | flight | air travel | traveling through air | travel by air",
    "travels_on_water": "traveling on water | travel on water | water travel | sailing | sail | boating",
    "can_drive": "driving | drive",
    "can_ride": "riding | ride",
    "shows_dates": "keeping track of date | keep track of date | scheduling | schedule | tracking date | "
    "track date | showing date | show date",
    "written_on": "writing on | write on",
    "hangs_on_wall": "hanging on wall | hang on wall | wall decoration",
    "used_in_baseball": "baseball | playing baseball | play baseball",
    "used_in_tennis": "tennis | playing tennis | play tennis",
    "used_in_golf": "golf | playing golf | play golf",
    "used_in_basketball": "basketball | playing basketball | play basketball",
    "used_in_soccer": "soccer | playing soccer | play soccer",
    "used_in_football": "football | playing football | play football",
    "used_in_volleyball": "volleyball | playing volleyball | play volleyball",
    "is_wearable": "wearing | wear",
}
"""Property -> what people say a thing with it is for ("Is it used for <phrase>?", "Do you use it to <phrase>?")."""

OTHER_NAMES: dict[str, str] = {
    "tennis racket": "racket | racquet | tennis racquet",
    "baseball bat": "bat",
    "lawn mower": "mower | lawnmower",
    "smartphone": "phone | cell phone | cellphone | mobile phone | smart phone | iphone",
    "refrigerator": "fridge",
    "couch": "sofa",
    "car": "automobile",
    "airplane": "aeroplane | jet | airliner",
    "motorcycle": "motorbike",
    "television": "tv set | telly | television set",
    "bookcase": "bookshelf | book case",
    "nightstand": "night stand | bedside table",
    "pants": "trousers",
    "shirt": "t shirt | tshirt",
    "rock": "stone",
    "forest": "woods",
    "bush": "shrub",
    "rabbit": "bunny",
    "hairclip": "hair clip | hairpin | hair pin | barrette",
    "earring": "ear ring",
    "lego": "lego brick | lego block",
    "puzzle": "jigsaw",
    "saxophone": "sax",
    "drum": "drum set | drum kit",
    "violin": "fiddle",
    "paintbrush": "paint brush",
    "toothbrush": "tooth brush",
    "toothpaste": "tooth paste",
    "screwdriver": "screw driver",
    "basketball": "basket ball",
    "football": "foot ball",
    "baseball": "base ball",
    "volleyball": "volley ball",
    "watermelon": "water melon",
    "pineapple": "pine apple",
    "shovel": "spade",
    "headphone": "earphones | headset",
    "sharpie": "sharpie marker",
    "pen": "ballpoint pen",
    "calendar": "wall calendar",
    "diary": "journal",
    "meteorite": "meteor",
    "ship": "cruise ship",
    "boat": "motorboat",
}
"""Word -> names people use for it that are not among its aliases (the oracle treats them as aliases)."""
